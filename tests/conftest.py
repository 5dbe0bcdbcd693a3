"""Shared test setup: import the collection from this checkout, not from an installed copy."""

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLES = REPO_ROOT / "tests" / "samples"

# collections/ansible_collections/ncclkit/cluster links to the checkout.
sys.path.insert(0, str(REPO_ROOT / "collections"))
sys.path.insert(0, str(REPO_ROOT / "src"))
# The roles' test packages (tests/roles/<role>/ with __init__.py) import each other's helpers
# as `<role>.module`, whichever test pytest collects first.
sys.path.insert(0, str(REPO_ROOT / "tests" / "roles"))


import pytest  # noqa: E402
from ansible.module_utils import _internal as _ansible_internal  # noqa: E402


@pytest.fixture(autouse=True)
def _modules_run_as_on_a_host(monkeypatch):
    """Modules run in-process here (patch_module_args) must behave as on a host: once any test has
    imported controller code (a filter plugin, ansible.errors), ansible-core marks the process as
    the controller, and AnsibleModule.warn() then prints instead of returning `warnings`. Each test
    starts as a host again, so the result does not depend on which tests ran before."""
    monkeypatch.setattr(_ansible_internal, "is_controller", False)
