"""Product code never reads what `ncclkit lab fault` writes: check, diagnose, launch and the collection
must find a fault the way they find it on a real host, not from the fault module, its state file or
its stash. Only the fault package itself and the `lab` subcommand may name it."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ALLOWED = {REPO / "src" / "ncclkit" / "commands" / "lab.py"}
ALLOWED_DIRS = (REPO / "src" / "ncclkit" / "lab" / "fault",)
PRODUCT = ("plugins", "roles", "playbooks", "src/ncclkit")
# The module's import paths, and the files it keeps under the lab's state dir.
REFERENCE = re.compile(r"lab[./]fault\b|faults\.json|fault/stash|\bfault_job\b|FAULT_(JOB|RANK|STEP|CGROUP)")


def product_files():
    for top in PRODUCT:
        for path in sorted((REPO / top).rglob("*")):
            if path.suffix not in (".py", ".yml", ".yaml", ".j2", ".sh") or not path.is_file():
                continue
            if path in ALLOWED or any(folder in path.parents for folder in ALLOWED_DIRS):
                continue
            yield path


def test_product_code_never_refers_to_the_fault_module():
    found = [f"{path.relative_to(REPO)}:{number}: {line.strip()}"
             for path in product_files()
             for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
             if REFERENCE.search(line)]
    assert not found, "product code refers to `ncclkit lab fault`:\n" + "\n".join(found)


def test_the_scan_sees_product_code_and_the_pattern_catches_an_import():
    files = list(product_files())
    assert any(path.name == "findings.py" and "check" in path.parts for path in files)
    assert REFERENCE.search("from ncclkit.lab.fault import store")
    assert REFERENCE.search("json.load(open(state / 'fault' / 'faults.json'))")
    assert not REFERENCE.search("from ncclkit.lab import Lab")
