"""The nccl_profile role on a 2-node lab cluster (index 40), shared by this package's tests.

`run_profile(...)` runs playbook.yml (nccl_preflight, then nccl_profile) with ansible-playbook
and returns the exit code, the output, the recap and the facts each host printed.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from lab_indices import lab_index
from lab_playbook import lab_cluster, play

from ncclkit.lab import Lab

REPO_ROOT = Path(__file__).resolve().parents[3]
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
            dummy, host, data = json.loads(m.group(1)).split(" ", 2)
            run.facts[host] = json.loads(data)
        in_recap = in_recap or line.startswith("PLAY RECAP")
        if in_recap and (m := RECAP_LINE.match(line.strip())):
            run.recap[m.group(1)] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
    return run


@pytest.fixture(scope="package")
def lab(tmp_path_factory):
    yield from lab_cluster(INDEX, tmp_path_factory.mktemp(f"lab{INDEX}"), nodes=2, outsider=True)


@pytest.fixture(scope="package")
def run_profile(lab):
    """run_profile(check=False, **extra_vars) -> Run"""
    def run(check: bool = False, **extra_vars) -> Run:
        done = play(lab.inventory_path, str(PLAYBOOK), {"nccl_profile_python": sys.executable, **extra_vars},
                    env={"ANSIBLE_CALLBACK_RESULT_FORMAT": "json"}, args=("--check",) if check else ())
        return parse_run(done.rc, done.stdout, done.seconds)

    return run


def node_sh(lab: Lab, node: str, script: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return lab.exec(node, ["sh", "-c", script], capture_output=True, text=True, timeout=timeout)
