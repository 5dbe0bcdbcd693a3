"""Every module is either supported or deprecated, never left in between: a supported module is
used by a role or playbook or documented in docs/ for playbooks of one's own, and has a test; a
deprecated one says so in its DOCUMENTATION and in meta/runtime.yml's plugin_routing, alike."""

import re

import pytest
import yaml

from conftest import REPO_ROOT

MODULES = sorted(path.stem for path in (REPO_ROOT / "plugins" / "modules").glob("*.py") if path.stem != "__init__")
ROUTING = (yaml.safe_load((REPO_ROOT / "meta" / "runtime.yml").read_text()).get("plugin_routing") or {}).get(
    "modules") or {}


def _text(folders, suffixes):
    return "\n".join(path.read_text(errors="replace") for folder in folders for path in (REPO_ROOT / folder).rglob("*")
                     if path.is_file() and path.suffix in suffixes)


USES = _text(["roles", "playbooks", "molecule"], {".yml", ".yaml", ".j2"}) + (REPO_ROOT / "site.yml").read_text()
DOCS = _text(["docs"], {".md"})
TESTS = _text(["tests"], {".py"})


def _documentation(name):
    source = (REPO_ROOT / "plugins" / "modules" / f"{name}.py").read_text()
    return yaml.safe_load(source.split('DOCUMENTATION = r"""', 1)[1].split('"""', 1)[0])


@pytest.mark.parametrize("name", MODULES)
def test_a_module_is_supported_or_deprecated(name):
    deprecated = _documentation(name).get("deprecated")
    routed = (ROUTING.get(name) or {}).get("deprecation")
    assert bool(deprecated) == bool(routed), f"{name}: deprecated in one place only (DOCUMENTATION or runtime.yml)"
    if deprecated:
        assert str(deprecated["removed_in"]) == str(routed["removal_version"])
        assert routed["warning_text"] and deprecated["alternative"]
        return
    used = re.search(rf"ncclkit\.cluster\.{name}\b", USES)
    documented = re.search(rf"\b{name}\b", DOCS)
    assert used or documented, f"{name}: no role uses it and no doc names it: document it or deprecate it"
    assert re.search(rf"\b{name}\b", TESTS.replace("public_names", "")), f"{name} has no test"


def test_the_deprecated_modules_are_the_ones_no_role_uses():
    for name in ROUTING:
        assert not re.search(rf"ncclkit\.cluster\.{name}\b", USES), f"{name} is deprecated but a role uses it"
