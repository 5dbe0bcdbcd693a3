"""plugins/module_utils is layered (docs/design.md, "Packages and layers"): an import points down a
layer or stays within its own package; raw_scripts import nothing of ours (they are sent to hosts
through `raw` as they are); no module_utils imports a module or a filter plugin."""

import ast
from pathlib import Path

import pytest

from conftest import REPO_ROOT

MODULE_UTILS = REPO_ROOT / "plugins" / "module_utils"
PREFIX = "ansible_collections.ncclkit.cluster.plugins."
# Lower number: lower layer. A package may import a package of a lower layer, or itself.
LAYERS = {
    "common": 0, "raw_scripts": 0,
    "host": 1,
    "nccl_tests": 2, "network": 2, "profile": 2, "clouds": 2,
    "check": 3, "diagnosis": 3,
    "validate": 4,
    "report": 5,
}
SELF_CONTAINED = {"raw_scripts"}


def imported_names(path: Path, root: Path) -> list:
    """(line, dotted name under ansible_collections.ncclkit.cluster.plugins.) of each of our imports,
    relative ones resolved against the file's own package."""
    package = path.relative_to(root.parent.parent).with_suffix("").parts[:-1]   # ("plugins", "module_utils", ...)
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                name = ".".join([*base[1:], *(node.module.split(".") if node.module else [])])
                found.append((node.lineno, name))
            elif node.module and node.module.startswith(PREFIX):
                found.append((node.lineno, node.module[len(PREFIX):]))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name[len(PREFIX):]) for alias in node.names
                      if alias.name.startswith(PREFIX)]
    return found


def violations(root: Path) -> list:
    """'file:line: why' for every import under `root` (a plugins/module_utils folder) that breaks the rule."""
    found = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts
        own = parts[0] if len(parts) > 1 else None
        where = f"{path.relative_to(root.parent.parent)}"
        for line, name in imported_names(path, root):
            kind, dummy, rest = name.partition(".")
            target = rest.split(".")[0] if rest else ""
            if kind in ("modules", "filter"):
                found.append(f"{where}:{line}: module_utils imports plugins/{kind} ({name})")
            elif kind != "module_utils" or own is None:
                continue
            elif own in SELF_CONTAINED and target != own:
                found.append(f"{where}:{line}: {own} imports nothing of ours, yet imports {target}")
            elif target == own:
                continue
            elif target not in LAYERS or own not in LAYERS:
                found.append(f"{where}:{line}: {own} -> {target}: a package without a layer (add it to LAYERS "
                             "and docs/design.md)")
            elif LAYERS[target] >= LAYERS[own]:
                found.append(f"{where}:{line}: {own} (layer {LAYERS[own]}) imports {target} "
                             f"(layer {LAYERS[target]}): imports point down a layer")
    return found


def test_every_package_has_a_layer():
    packages = {path.name for path in MODULE_UTILS.iterdir() if (path / "__init__.py").is_file()}
    assert packages == set(LAYERS), packages ^ set(LAYERS)


def test_imports_point_down_a_layer():
    assert violations(MODULE_UTILS) == []


def _tree(tmp_path, files):
    root = tmp_path / "plugins" / "module_utils"
    for name in [*LAYERS, "network/links"]:
        (root / name).mkdir(parents=True, exist_ok=True)
        (root / name / "__init__.py").write_text("")
    for name, text in files.items():
        (root / name).write_text(text)
    return root


@pytest.mark.parametrize("name, text, why", [
    ("host/nics.py", f"from {PREFIX}module_utils.network.ports import x\n", "imports point down a layer"),
    ("check/judge.py", f"from {PREFIX}module_utils.diagnosis import log\n", "imports point down a layer"),
    ("common/x.py", f"import {PREFIX}module_utils.host.command\n", "imports point down a layer"),
    ("network/links/b.py", "from ...check import findings\n", "imports point down a layer"),
    ("raw_scripts/probe.py", f"from {PREFIX}module_utils.common import findings\n", "imports nothing of ours"),
    ("report/x.py", f"from {PREFIX}modules.nccl_perf import main\n", "imports plugins/modules"),
    ("validate/x.py", f"from {PREFIX}filter.validate_gates import FilterModule\n", "imports plugins/filter"),
])
def test_a_bad_import_is_caught(tmp_path, name, text, why):
    found = violations(_tree(tmp_path, {name: text}))
    assert len(found) == 1 and why in found[0] and name in found[0], found


def test_good_imports_pass(tmp_path):
    root = _tree(tmp_path, {
        "report/x.py": f"from {PREFIX}module_utils.validate import gates\nfrom .y import z\n",
        "network/links/b.py": f"from {PREFIX}module_utils.network.reachability import v\nfrom ..ports import p\n"
                              f"from {PREFIX}module_utils.host.command import run_command\n",
        "host/nics.py": f"import {PREFIX}module_utils.common.findings\nimport json\n",
    })
    assert violations(root) == []
