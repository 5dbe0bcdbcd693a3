"""The nccl_profile role on a 2-node lab cluster (index 40), shared by this package's tests.

`run_profile(...)` runs playbook.yml (nccl_preflight, then nccl_profile) with ansible-playbook
and returns the exit code, the output, the recap and the facts each host printed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ncclkit.lab import Lab
from lab_indices import lab_index

REPO_ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK = Path(__file__).with_name("playbook.yml")
INDEX = lab_index(__file__)
FACTS_LINE = re.compile(r'^\s*"msg": ("NCCLKIT_FACTS .*")\s*$')
RECAP_LINE = re.compile(r"^(\S+)\s+:\s+((?:\w+=\d+\s*)+)$")


@dataclass
class Run:
    rc: int
    output: str
    seconds: float
    recap: dict = field(default_factory=dict)
    facts: dict = field(default_factory=dict)

    def changed(self) -> dict:
        return {host: counts["changed"] for host, counts in self.recap.items()}


def parse_run(rc: int, output: str, seconds: float) -> Run:
    run = Run(rc, output, seconds)
    in_recap = False
    for line in output.splitlines():
        if (m := FACTS_LINE.match(line)):
            _, host, data = json.loads(m.group(1)).split(" ", 2)
            run.facts[host] = json.loads(data)
        in_recap = in_recap or line.startswith("PLAY RECAP")
        if in_recap and (m := RECAP_LINE.match(line.strip())):
            run.recap[m.group(1)] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
    return run


@pytest.fixture(scope="package")
def lab(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("the lab cluster needs root: run pytest as root")
    lab = Lab(INDEX)
    lab.down()   # whatever an interrupted earlier run left
    lab.up(nodes=2, outsider=True, inventory_path=tmp_path_factory.mktemp(f"lab{INDEX}") / "hosts.yml")
    yield lab
    lab.down()


@pytest.fixture(scope="package")
def run_profile(lab):
    """run_profile(check=False, **extra_vars) -> Run"""
    import time

    def run(check: bool = False, **extra_vars) -> Run:
        extra = {"nccl_profile_python": sys.executable, **extra_vars}
        argv = [str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(lab.inventory_path),
                str(PLAYBOOK), "-e", json.dumps(extra)] + (["--check"] if check else [])
        env = {**os.environ, "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"),
               "ANSIBLE_CALLBACK_RESULT_FORMAT": "json", "ANSIBLE_NOCOLOR": "1",
               "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_DEPRECATION_WARNINGS": "0"}
        started = time.monotonic()
        done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=600)
        return parse_run(done.returncode, done.stdout + done.stderr, time.monotonic() - started)

    return run


def node_sh(lab: Lab, node: str, script: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return lab.exec(node, ["sh", "-c", script], capture_output=True, text=True, timeout=timeout)
