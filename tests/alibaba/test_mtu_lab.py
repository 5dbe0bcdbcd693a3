"""The MTU proven end to end on `ncclkit lab up --mtu 8500` (lab 130) with node2 left at 1500:
the network check names node2; cloud_alibaba's audit names it too and changes nothing; apply
gives it 8500, after which the full-size don't-fragment pings pass; a second apply changes nothing."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ncclkit.lab import Lab

pytestmark = pytest.mark.lab
REPO_ROOT = Path(__file__).resolve().parents[2]
INDEX = 130
PLAYBOOK = "tests/alibaba/playbook.yml"
RECAP = re.compile(r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("the lab cluster needs root: run pytest as root")
    lab = Lab(INDEX)
    lab.down()
    lab.up(nodes=2, mtu=8500, inventory_path=tmp_path_factory.mktemp("lab130") / "hosts.yml")
    yield lab
    lab.down()


def run(lab: Lab, **variables) -> tuple[subprocess.CompletedProcess, float, dict]:
    extra = {"ncclkit_cloud": "alibaba", "nccl_network_install_packages": False, **variables}
    argv = [str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(lab.inventory_path), PLAYBOOK,
            "-e", json.dumps(extra)]
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=600)
    counts = {host: dict(zip(("ok", "changed", "unreachable", "failed"), map(int, rest)))
              for host, *rest in RECAP.findall(done.stdout)}
    return done, time.monotonic() - started, counts


def mtu(lab: Lab, node: str) -> int:
    return int(lab.exec(node, ["cat", "/sys/class/net/eth1/mtu"], capture_output=True, text=True).stdout)


def flat(text: str) -> str:
    return " ".join(text.replace("''", "'").split())


def test_a_host_left_at_1500_is_named_then_fixed(lab):
    assert lab.exec("node2", ["ip", "link", "set", "dev", "eth1", "mtu", "1500"]).returncode == 0
    audit, _, counts = run(lab)
    assert audit.returncode != 0
    out = flat(audit.stdout)
    assert "node2's eth1 has MTU 1500, not 8500 like the cluster" in out
    assert "node1's eth1 has MTU 8500, not" not in out
    assert "MTU mismatch" in out and "node2" in out.split("MTU mismatch", 1)[1][:200]
    assert mtu(lab, "node2") == 1500            # audit changed nothing

    applied, seconds, counts = run(lab, cloud_alibaba_mode="apply")
    assert applied.returncode == 0, applied.stdout[-3000:]
    assert mtu(lab, "node2") == 8500
    assert "not persisted: nothing configures this NIC" in flat(applied.stdout)
    print(f"\nMTU set and proven (preflight + cloud_alibaba apply + nccl_network) in {seconds:.1f} s")

    again, _, counts = run(lab, cloud_alibaba_mode="apply")
    assert again.returncode == 0
    assert all(host["changed"] == 0 for host in counts.values()), counts


def test_an_mtu_above_a_nics_limit_changes_no_host(lab):
    before = {node: mtu(lab, node) for node in ("node1", "node2")}
    done, _, counts = run(lab, cloud_alibaba_mode="apply", cloud_alibaba_mtu="70000")
    assert done.returncode != 0
    assert "MTU 70000 is outside 576-65535" in flat(done.stdout) and "No host was changed" in flat(done.stdout)
    assert {node: mtu(lab, node) for node in ("node1", "node2")} == before
