"""nccl_validate's self-calibrated Gloo gate and its automatic slow-node search on one 4-node lab
without GPU, in one playbook run (tests/roles/nccl_validate/playbooks/gates_lab.yml). nccl_network measures
the links (ncclkit_network.link_bandwidth) on the healthy lab; nccl_validate calibrates the gate on
that record and measures nothing of the links itself. Healthy, the gate passes and no search runs;
with one node's eth1 throttled to 100 Mbit/s the gate fails WITHOUT nccl_validate_find_slow set,
the search starts on its own and names that node, and only it, in the reasons and the report.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from lab_indices import lab_index
from lab_playbook import lab_cluster, play

pytestmark = [pytest.mark.lab, pytest.mark.slow]

INDEX = lab_index(__file__)
PLAYBOOK = Path(__file__).resolve().parent / "playbooks" / "gates_lab.yml"
NODES = ["node1", "node2", "node3", "node4"]
THROTTLED = "node3"
# The gate's fraction as the role ships it: the test checks the default, not a value of its own.
FRACTION = yaml.safe_load((Path(__file__).resolve().parents[3] / "roles" / "nccl_validate" / "defaults" / "main.yml")
                          .read_text())["nccl_validate_gloo_busbw_fraction"]
TAGS = ("--tags", "nccl_preflight,nccl_network_diagnose,nccl_profile,nccl_validate,gates_lab")
VARIABLES = {
    # The tools are on the host already (the nodes share /usr).
    "nccl_network_install_packages": False,
    "nccl_profile_python": sys.executable,
    # 4 MiB keeps the throttled run short (a 64 MiB all-reduce takes ~7 s a step at 100 Mbit/s).
    "nccl_validate_gloo_bytes": 4 << 20,
    # Pairs of a round share this machine's cores (iperf3 on veth is CPU-bound), so healthy pairs
    # vary two- or threefold under load: a quarter of the median still tells them from 100 Mbit/s.
    "nccl_validate_find_slow_seconds": 1,
    "nccl_validate_find_slow_fraction": 0.25,
    # nccl_network's link gate (not this test's subject) takes the lab inventory's 0.25: its
    # iperf3 pairs share the same two cores (tests/lab/test_link_bandwidth_lab.py tests the default).
}


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    folder = tmp_path_factory.mktemp(f"lab{INDEX}")
    for lab in lab_cluster(INDEX, folder, nodes=len(NODES)):
        done = play(lab.inventory_path, str(PLAYBOOK),
                    {**VARIABLES, "gates_dir": str(folder), "gates_throttled": THROTTLED}, args=TAGS, timeout=900)
        print(f"play: {done.seconds:.1f} s")
        (folder / "play.log").write_text(done.stdout)
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


def measured_links(data: dict) -> dict:
    """nccl_network's record, as the report carries each host's ncclkit_network."""
    records = [facts["link_bandwidth"] for facts in data["network"].values() if (facts or {}).get("link_bandwidth")]
    assert records, data["network"]
    return records[0]


def test_a_healthy_lab_passes_the_gate_calibrated_on_nccl_networks_links(played):
    done, reports = played
    healthy = reports["healthy"]
    gate = gloo_gate(healthy)
    links = measured_links(healthy)
    assert healthy["passed"], (healthy["reasons"], done.stdout[-3000:])
    # nccl_network's own measurement: the ring and two rounds of random pairs, both directions.
    assert links["measured"] and links["passed"] is True and len(links["links"]) == 12, links
    assert gate["state"] == "passed" and gate["measured"] > gate["threshold"] > 0, gate
    expected = f"{FRACTION:g} x median link {links['median_gbps']:g} Gbit/s (iperf3, 12 link(s)) / 8"
    assert gate["source"] == expected, gate
    assert gate["threshold"] == pytest.approx(FRACTION * links["median_gbps"] / 8, rel=0.01), gate
    assert "## Gates" in healthy["markdown"] and gate["source"] in healthy["markdown"]
    assert '<section id="gates">' in healthy["html"]
    # No gate failed, so the search did not run.
    assert not healthy.get("find_slow"), healthy.get("find_slow")
    assert "Slow-node search" not in healthy["markdown"]
    print("healthy:", gate, "links:", links["median_gbps"], [link["sent_gbps"] for link in links["links"]])


def test_a_throttled_node_fails_the_gate_and_the_search_starts_by_itself_and_names_it(played):
    done, reports = played
    throttled = reports["throttled"]
    gate = gloo_gate(throttled)
    assert not throttled["passed"] and gate["state"] == "failed", gate
    assert gate["measured"] < gate["threshold"] == gloo_gate(reports["healthy"])["threshold"], gate
    assert any("busbw" in reason and "against a floor of" in reason for reason in throttled["reasons"]), \
        throttled["reasons"]
    assert throttled["settings"]["gloo_min_busbw_gbps"] == "auto"
    found = throttled["find_slow"]
    assert found["why"].startswith("the multi-node gate failed: "), found["why"]
    assert found["slow_hosts"] == [THROTTLED] and found["groups"] == [] and not found["passed"], found
    assert len(found["rounds"]) == 3 and len(found["pairs"]) == 6
    for pair in found["pairs"]:
        assert pair["slow"] == (THROTTLED in pair["hosts"]), pair
    # Named, and only it, in the reasons, the play's verdict and the report.
    named = [reason for reason in throttled["reasons"] if " is slow" in reason]
    assert len(named) == 1 and named[0].startswith(f"{THROTTLED} is slow: its pairs "), throttled["reasons"]
    assert named[0] in done.stdout and f"{THROTTLED} is slow" in throttled["markdown"]
    others = [node for node in NODES if node != THROTTLED]
    assert not any(f"{node} is slow" in throttled["markdown"] + done.stdout for node in others)
    assert "## Slow-node search: slow: " + THROTTLED in throttled["markdown"]
    assert done.rc == 0, done.stdout[-3000:]   # the throttled validation was told not to fail the play
    print("throttled:", gate, "search:", found["reference"], [pair["value"] for pair in found["pairs"]])
