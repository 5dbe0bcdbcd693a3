"""nccl_network's link-bandwidth gate on a 4-node lab (lab index 30): the healthy lab passes with
every link measured both ways; with node2's eth1 shaped to 100 Mbit/s (tc tbf, inside its
namespace) the play fails naming the slow links, node2 in each of them, and the figures."""

from __future__ import annotations

import json
import re

import pytest
from lab_helpers import needs_root
from lab_indices import lab_index
from lab_playbook import lab_cluster, play

pytestmark = [pytest.mark.lab, needs_root]

INDEX = lab_index(__file__)
PLAYBOOK = "tests/lab/playbooks/link_bandwidth.yml"
# The tools are on the host already (nodes share /usr); only the preflight and the check run.
# Every node shares the machine's cores, so a node's figures dip while the others take them:
# two-second tests smooth that (the gate's defaults stay).
# The role's default fraction (0.5), over the lab inventory's looser one.
VARIABLES = {"nccl_network_install_packages": False, "nccl_network_iperf3": True, "nccl_network_iperf3_seconds": 2,
             "nccl_network_link_median_fraction": 0.5}
TAGS = ("--tags", "nccl_preflight,nccl_network_diagnose")
# Results as JSON, so that the record prints on one line.
ENV = {"ANSIBLE_CALLBACK_RESULT_FORMAT": "json"}
THROTTLE = "tc qdisc add dev eth1 root tbf rate 100mbit burst 64kbit latency 50ms"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    folder = tmp_path_factory.mktemp(f"lab{INDEX}")
    for built in lab_cluster(INDEX, folder, nodes=4):
        built.inventory = folder / "hosts.yml"
        yield built


def links_of(played):
    found = re.search(r"LINKS (\{.*\})\"", played.stdout)
    assert found, played.stdout[-3000:]
    return json.loads(found.group(1).replace('\\"', '"'))


def test_the_healthy_lab_passes_with_every_link_measured_both_ways(lab):
    played = play(lab.inventory, PLAYBOOK, VARIABLES, env=ENV, args=TAGS, timeout=300)
    assert played.rc == 0, played.stdout[-3000:]
    record = links_of(played)
    assert record["measured"] and record["passed"] is True and record["slow"] == []
    assert record["threshold_source"] == "median" and record["threshold_gbps"] == round(0.5 * record["median_gbps"], 3)
    assert sorted({link["round"] for link in record["links"]}) == [0, 1, 2] and len(record["links"]) == 12
    assert all(link["sent_gbps"] > 0 and link["received_gbps"] > 0 for link in record["links"])
    assert record["median_gbps"] > 0.25, record   # far above the throttle below, even on a loaded machine


def test_a_throttled_node_fails_the_play_naming_its_links_and_figures(lab):
    lab.exec("node2", THROTTLE, check=True, timeout=30)
    try:
        played = play(lab.inventory, PLAYBOOK, VARIABLES, env=ENV, args=TAGS, timeout=300)
    finally:
        lab.exec("node2", "tc qdisc del dev eth1 root", check=True, timeout=30)
    text = played.flat()
    assert played.rc != 0 and "The cluster network is broken" in text, played.stdout[-3000:]
    slow = re.findall(r"ERROR slow_link \((node\d) -> (node\d)\): TCP bandwidth between \S+ and \S+ is "
                      r"([\d.]+) Gbit/s \S+ -> \S+ and ([\d.]+) Gbit/s back", text)
    throttled = [(sent, back) for source, target, sent, back in slow if "node2" in (source, target)]
    assert len(throttled) >= 2, text[-3000:]
    # 100 Mbit/s, shared by two flows at most; other links may dip under load, never to this.
    assert all(min(float(sent), float(back)) < 0.2 for sent, back in throttled)
    assert re.search(r"node2 is in (every slow link|\d+ of the \d+ slow links)", text), text[-3000:]
    assert "0.5 x the median" in text and "LINKS" not in text
