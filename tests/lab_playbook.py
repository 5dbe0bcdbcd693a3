"""Running the roles against a lab cluster from a test: one lab fixture body, one playbook runner.

Import it from any test module (tests/ is on sys.path): `from lab_playbook import lab_cluster, play`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import REPO_ROOT
from ncclkit.lab import Lab

RECAP = re.compile(r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)


@dataclass
class Played:
    rc: int
    stdout: str
    seconds: float
    recap: dict          # host -> {ok, changed, unreachable, failed}

    def flat(self) -> str:
        """The output on one line, YAML's doubled quotes undone: for `in` checks of wrapped messages."""
        return " ".join(self.stdout.replace("''", "'").split())


def lab_cluster(index: int, folder: Path, **up):
    """The body of a module-scoped lab fixture: `yield from lab_cluster(INDEX, tmp, profile="autodl")`
    (INDEX from tests/lab_indices.py)."""
    if os.geteuid() != 0:
        pytest.skip("the lab cluster needs root: run pytest as root")
    lab = Lab(index)
    lab.down()   # whatever an interrupted earlier run left
    assert lab.up(inventory_path=folder / "hosts.yml", **up) is True   # built now, not found up
    try:
        yield lab
    finally:
        lab.down()


def play(inventory: Path, playbook: str, variables: dict | None = None, env: dict | None = None,
         args: tuple = (), timeout: int = 600, cwd: Path = REPO_ROOT) -> Played:
    """ansible-playbook from the checkout (or started in `cwd`), as a user runs it, with extra
    variables as JSON; `args` go last (more `-i`, `--check`, `-e @file`)."""
    argv = [str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(inventory), playbook,
            *(["-e", json.dumps(variables)] if variables else []), *args]
    full_env = {**os.environ, "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
                "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_DEPRECATION_WARNINGS": "0", **(env or {})}
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=full_env, timeout=timeout,
                          check=False)
    recap = {host: dict(zip(("ok", "changed", "unreachable", "failed"), map(int, counts), strict=True))
             for host, *counts in RECAP.findall(done.stdout)}
    return Played(done.returncode, done.stdout + done.stderr, time.monotonic() - started, recap)
