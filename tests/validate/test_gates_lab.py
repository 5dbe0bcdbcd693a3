"""nccl_validate's self-calibrated Gloo gate on a 3-node lab without GPU: with no busbw threshold
set by hand, the healthy lab passes and the same lab with one node's eth1 throttled to 100 Mbit/s
fails, the report saying the gate's measured value, threshold and where the threshold came from.

The links are measured by the playbook itself with iperf3 (tests/validate/playbooks/measure_links.yml),
in the shape nccl_network records as ncclkit_network.link_bandwidth.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from lab_indices import lab_index
from lab_playbook import lab_cluster, play

pytestmark = [pytest.mark.lab, pytest.mark.slow]

INDEX = lab_index(__file__)
PLAYBOOK = Path(__file__).resolve().parent / "playbooks" / "gates_lab.yml"


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    folder = tmp_path_factory.mktemp(f"lab{INDEX}")
    for lab in lab_cluster(INDEX, folder, nodes=3):
        # 4 MiB keeps the throttled run short (a 64 MiB all-reduce takes ~7 s a step at 100 Mbit/s).
        done = play(lab.inventory_path, str(PLAYBOOK), {"gates_dir": str(folder), "nccl_profile_python": sys.executable,
                                                        "nccl_validate_gloo_bytes": 4 << 20}, timeout=900)
        yield done, {name: report(folder / name, done.stdout) for name in ("healthy", "throttled")}


def report(parent: Path, output: str) -> dict:
    folders = sorted(parent.glob("2*"))
    assert len(folders) == 1, output[-4000:]
    data = json.loads((folders[0] / "report.json").read_text())
    data["markdown"] = (folders[0] / "report.md").read_text()
    data["html"] = (folders[0] / "report.html").read_text()
    return data


def gloo_gate(data: dict) -> dict:
    runs = [run for run in data["runs"] if run["name"] == "gloo"]
    assert len(runs) == 1, data["runs"]
    rows = runs[0]["gate_rows"]
    assert [row["name"] for row in rows] == ["busbw (GB/s)"], rows
    return rows[0]


def test_a_healthy_lab_passes_the_gloo_gate_calibrated_on_its_links(played):
    done, reports = played
    healthy = reports["healthy"]
    gate = gloo_gate(healthy)
    assert healthy["passed"], (healthy["reasons"], done.stdout[-3000:])
    assert gate["state"] == "passed" and gate["measured"] > gate["threshold"] > 0, gate
    assert gate["source"].startswith("0.07 x median link ") and "Gbit/s (iperf3, 3 link(s)) / 8" in gate["source"]
    assert "## Gates" in healthy["markdown"] and gate["source"] in healthy["markdown"]
    assert '<section id="gates">' in healthy["html"]
    print("healthy:", gate)


def test_the_same_lab_with_one_node_throttled_fails_it(played):
    done, reports = played
    throttled = reports["throttled"]
    gate = gloo_gate(throttled)
    assert not throttled["passed"] and gate["state"] == "failed", gate
    assert gate["measured"] < gate["threshold"], gate
    assert any("busbw" in reason and "against a floor of" in reason for reason in throttled["reasons"]), \
        throttled["reasons"]
    # The median of the links is not dragged down by the one slow node.
    assert gate["threshold"] > 0.5 * gloo_gate(reports["healthy"])["threshold"], gate
    assert done.rc == 0, done.stdout[-3000:]   # the throttled validation was told not to fail the play
    print("throttled:", gate)
