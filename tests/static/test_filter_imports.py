"""Filter files import their module_utils inside the filter functions, never at the top.

Ansible imports every filter file of the collection in each worker process that calls any one
ncclkit filter, so a top-level module_utils import costs every such worker its import time
(0.11 s CPU per worker with them at the top, 0.02 s without: docs/benchmarks.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

FILTERS = sorted((Path(__file__).resolve().parents[2] / "plugins" / "filter").glob("*.py"))
OURS = "ansible_collections.ncclkit.cluster.plugins.module_utils"


@pytest.mark.parametrize("path", FILTERS, ids=lambda path: path.name)
def test_no_module_utils_import_at_the_top_of_a_filter_file(path):
    tree = ast.parse(path.read_text())
    top = [node for node in tree.body if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(OURS)]
    top += [node for node in tree.body if isinstance(node, ast.Import)
            and any(alias.name.startswith(OURS) for alias in node.names)]
    assert not top, f"{path.name} line {top[0].lineno}: import the module_utils inside the filter function"


def test_the_filter_files_are_found():
    # One file per concern (docs/development.md, Filters); a renamed or lost file shows here.
    assert {"common", "host", "network", "profile", "check", "nccl_tests", "validate", "autotune",
            "cloud_aws"} <= {path.stem for path in FILTERS}
