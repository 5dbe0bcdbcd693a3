"""nccl_validate's slow-node search on a 4-node lab (no GPU): real iperf3 pair tests in rounds over
eth1. With one node's eth1 throttled by tc (100 Mbit/s against the others' several Gbit/s) the
validation fails and its last reason names that node; unthrottled it passes with every pair
measured.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "lab"))
from lab_helpers import needs_root  # noqa: E402
from lab_indices import lab_index  # noqa: E402
from lab_playbook import lab_cluster, play  # noqa: E402

pytestmark = [pytest.mark.lab, needs_root]

INDEX = lab_index(__file__)
PLAYBOOK = Path(__file__).resolve().parent / "validate.yml"
NODES = ["node1", "node2", "node3", "node4"]
THROTTLE = ["tc", "qdisc", "add", "dev", "eth1", "root", "tbf", "rate", "100mbit", "burst", "32kbit",
            "latency", "400ms"]
# No GPU and no Gloo: the slow-node search is the only test, asked for explicitly. Pairs of a
# round share this machine's cores (every iperf3 is CPU-bound on veth), so healthy pairs vary by
# 2-3x under load: a quarter of the median still tells them from the 100 Mbit/s node (10x and more).
EXTRA = {"ncclkit_gpu_capabilities": {"present": False, "count": 0}, "nccl_validate_gloo": False,
         "nccl_validate_find_slow": True, "nccl_validate_find_slow_seconds": 1,
         "nccl_validate_find_slow_fraction": 0.25}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    folder = tmp_path_factory.mktemp(f"lab{INDEX}")
    for lab in lab_cluster(INDEX, folder, nodes=4):
        # What nccl_preflight would set: each node's cluster address (eth1).
        hosts = yaml.safe_load(lab.inventory_path.read_text())["cluster"]["hosts"]
        (folder / "addresses.yml").write_text(yaml.safe_dump({"cluster": {"hosts": {
            name: {"ncclkit_cluster_ip": facts["ncclkit_lab_private_ip"]} for name, facts in hosts.items()}}}))
        yield lab


def validate(lab, workdir: Path):
    workdir.mkdir(parents=True, exist_ok=True)
    done = play(lab.inventory_path, str(PLAYBOOK), EXTRA, env={"PWD": str(workdir)}, cwd=workdir, timeout=300,
                args=("-i", str(lab.inventory_path.parent / "addresses.yml")))
    folders = sorted((workdir / "ncclkit-report").glob("2*"))
    assert len(folders) == 1, done.stdout[-3000:]
    print(f"play: {done.seconds:.1f} s")
    return done, json.loads((folders[0] / "report.json").read_text()), folders[0]


def test_unthrottled_every_pair_is_measured_and_it_passes(lab, tmp_path):
    done, report, folder = validate(lab, tmp_path)
    assert done.rc == 0, done.stdout[-3000:]
    assert report["verdict"] == "passed" and report["reasons"] == []
    found = report["find_slow"]
    assert found["passed"] and found["slow_hosts"] == [] and found["groups"] == []
    # Three rounds of two pairs: every pair of 4 nodes once, each a real figure.
    assert len(found["rounds"]) == 3 and len(found["pairs"]) == 6
    assert {frozenset(pair["hosts"]) for pair in found["pairs"]} == {
        frozenset((a, b)) for a in NODES for b in NODES if a < b}
    assert all(pair["value"] and pair["value"] > 0.2 and not pair["slow"] for pair in found["pairs"])
    assert "## Slow-node search: no slow node" in (folder / "report.md").read_text()
    assert "changed=0" in done.stdout.split("PLAY RECAP")[1]


def test_a_throttled_node_fails_the_validation_and_is_named(lab, tmp_path):
    throttled = lab.exec("node3", THROTTLE, capture_output=True, text=True, timeout=30)
    assert throttled.returncode == 0, throttled.stderr
    try:
        done, report, folder = validate(lab, tmp_path)
    finally:
        lab.exec("node3", ["tc", "qdisc", "del", "dev", "eth1", "root"], capture_output=True, timeout=30)
    assert done.rc != 0
    found = report["find_slow"]
    assert found["slow_hosts"] == ["node3"] and not found["passed"]
    slow = [pair for pair in found["pairs"] if "node3" in pair["hosts"]]
    assert len(slow) == 3 and all(pair["slow"] and pair["value"] < 0.2 for pair in slow)
    assert all(not pair["slow"] for pair in found["pairs"] if "node3" not in pair["hosts"])
    # The play's last line before the report's path names the node and its figures.
    message = done.stdout.split("PLAY RECAP")[0].rstrip().splitlines()
    assert message[-1].strip() == f"report: {folder}"
    assert message[-2].strip().startswith("node3 is slow: its pairs 0.")
    assert message[-2].strip().endswith(f"Gbit/s vs median {found['reference']:.2f} Gbit/s")
    assert "node3 is slow" in (folder / "report.md").read_text()
