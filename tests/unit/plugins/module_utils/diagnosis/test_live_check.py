"""diagnosis.live_check: the cluster's check, run now, names the host and reason of a rendezvous or
connection failure whose logs do not. The logs are corpus cases recorded on the lab (fault matrix);
the check documents are in the shape `ncclkit check --json` gave for those faults."""

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.live_check import explain
from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.log import read_nccl_log_files
from conftest import SAMPLES

CASES = SAMPLES / "failures"
MASTER = {"addr": "198.19.62.11", "port": 29500, "source": "the profile's ncclkit-torchrun", "host": "node1"}


def check(*findings, hosts=("node1", "node2"), unreachable=None, master=None):
    return {"verdict": "NOT READY: ..." if findings else "READY: multi-node training should start here",
            "ready": not findings, "findings": list(findings), "unreachable": unreachable or {},
            "master": master or MASTER, "hosts": list(hosts)}


def item(code, host, cause="a cause", fix="a fix", severity="error"):
    return {"code": code, "severity": severity, "host": host, "rank": None, "cause": cause, "fix": fix,
            "evidence": [f"{code} evidence"], "consequence_of": None}


def logs(case):
    folder = CASES / case
    return read_nccl_log_files(sorted(p for p in folder.iterdir() if p.name != "expected.json"))


def test_a_rendezvous_hang_takes_the_host_whose_nic_is_down():
    result = logs("eth1_down-1")
    assert result["findings"][0]["host"] in (None, "unknown")   # the logs alone cannot say
    explained = explain(result, check(item("cluster_nic_down", "node2", "node2's cluster NIC eth1 is down",
                                           "ip link set eth1 up")))
    root = explained["findings"][0]
    expected = (result["findings"][0]["code"], "node2", ["cluster_nic_down"])
    assert (root["code"], root["host"], root["explained_by"]) == expected
    assert "eth1 is down" in root["cause"] and root["fix"] == "ip link set eth1 up"
    added = explained["findings"][1]
    assert added["code"] == "cluster_nic_down" and added["source"] == "ncclkit check"
    assert "(node2" in explained["verdict"] and explained["notes"][-1].startswith("live check: NOT READY")


@pytest.mark.parametrize("blocked, expected", [
    (["node2"], "node1"),                      # the only other host cannot reach it: the master's side
    (["node2", "node3"], "node1"),             # none of the others can
    (["node3"], "node3"),                      # one of two others cannot: that host's side
])
def test_an_unreachable_rendezvous_port_points_at_the_master_only_when_nobody_reaches_it(blocked, expected):
    hosts = ("node1", "node2") if blocked == ["node2"] else ("node1", "node2", "node3")
    result = logs("rendezvous_port_dropped-1")
    explained = explain(result, check(*[item("master_port_blocked", h, f"{h} cannot reach the rendezvous")
                                        for h in blocked], hosts=hosts))
    root = explained["findings"][0]
    assert root["host"] == expected and root["explained_by"] == ["master_port_blocked"] * len(blocked)
    assert ("no other host reaches" in root["cause"]) == (expected == "node1")


def test_an_unpinned_gloo_on_a_host_with_a_public_name_is_named_with_every_reason():
    result = logs("profile_removed-1")
    explained = explain(result, check(item("hostname_unreachable", "node2"), item("gloo_unpinned", "node2"),
                                      item("nccl_unpinned", "node2"), item("gloo_unpinned", "node1",
                                                                           severity="warning")))
    root = explained["findings"][0]
    assert root["host"] == "node2"
    assert root["explained_by"] == ["hostname_unreachable", "gloo_unpinned", "nccl_unpinned"]
    assert [f["code"] for f in explained["findings"][1:4]] == ["hostname_unreachable", "gloo_unpinned",
                                                               "nccl_unpinned"]   # warnings are not added


def test_a_ready_cluster_leaves_the_diagnosis_as_the_logs_gave_it_with_a_note():
    result = logs("gloo_ports_dropped_inbound-1")
    explained = explain(result, check())
    assert explained["findings"] == result["findings"] and explained["verdict"] == result["verdict"]
    assert explained["notes"][-1] == "live check: READY: multi-node training should start here"


def test_a_healthy_job_stays_healthy_whatever_the_check_finds_now():
    result = logs("healthy-1")
    explained = explain(result, check(item("master_port_blocked", "node2")))
    assert explained["verdict"].startswith("HEALTHY") and explained["findings"] == result["findings"]


def test_a_job_that_failed_otherwise_is_not_blamed_on_the_network():
    result = logs("rank_exception-1")
    explained = explain(result, check(item("master_port_blocked", "node2"), item("shm_small", "node1")))
    root = explained["findings"][0]
    assert root["code"] == "rank_exception" and "explained_by" not in root
    assert root["host"] == result["findings"][0]["host"] and root["rank"] == result["findings"][0]["rank"]


def test_a_port_held_now_moves_no_host_the_logs_named():
    # A store still bound by the job's own survivor reads as master_port_in_use: only a root whose
    # host the logs leave unknown takes it.
    result = logs("stale_master_port-1")
    assert result["findings"][0]["host"] == "node1"
    assert explain(result, check(item("master_port_in_use", "node2")))["findings"][0]["host"] == "node1"
    unnamed = dict(result, findings=[dict(result["findings"][0], host="unknown")] + result["findings"][1:])
    root = explain(unnamed, check(item("master_port_in_use", "node2")))["findings"][0]
    assert root["host"] == "node2" and root["explained_by"] == ["master_port_in_use"]


def test_an_unreachable_host_explains_a_connection_failure_with_no_host():
    result = logs("nccl_ports_rejected-1")
    explained = explain(result, check(unreachable={"node2": "ssh: connect to host 10.0.0.12 port 22: No route"}))
    root = explained["findings"][0]
    assert root["host"] == "node2" and root["explained_by"] == ["host_unreachable"] and "No route" in root["cause"]


def test_a_collective_hang_with_no_rank_to_blame_takes_a_path_that_drops_full_frames():
    result = logs("rank_stopped-1")
    root = result["findings"][0]
    assert root["code"] == "hang_in_collective" and root["rank"] is not None
    blamed = explain(result, check(item("path_mtu", "node2")))["findings"][0]
    assert "explained_by" not in blamed   # the logs named the stopped rank: the network is not asked
    unnamed = dict(result, findings=[dict(root, rank=None)] + result["findings"][1:])
    explained = explain(unnamed, check(item("path_mtu", "node2"), item("gloo_unpinned", "node1")))["findings"][0]
    assert (explained["host"], explained["explained_by"]) == ("node2", ["path_mtu"])


def test_a_suspect_rank_whose_own_host_drops_its_peers_connections_is_explained_by_that_host():
    """A rank that "never entered the collective" (its peers timed out, it did not) on a host whose firewall
    the check finds dropping connections to its ports: the rank never got the data (the 3-node matrix's
    gloo_ports_dropped_inbound read so from its logs). The same finding on another host explains nothing."""
    result = logs("rank_stopped-1")
    root = result["findings"][0]
    assert (root["code"], root["host"]) == ("hang_in_collective", "node1")
    other = explain(result, check(item("peer_ports_blocked", "node2")))["findings"][0]
    assert "explained_by" not in other and other["rank"] == root["rank"]
    own = explain(result, check(item("peer_ports_blocked", "node1"), item("path_mtu", "node1")))["findings"][0]
    assert (own["code"], own["host"], own["explained_by"]) == ("hang_in_collective", "node1", ["peer_ports_blocked"])


def test_a_host_that_rejects_its_peers_connections_is_named_over_the_rendezvous_master():
    # Two nodes, node2 rejecting inbound to its ephemeral range (the replies to its own connections
    # too): node2 cannot reach the rendezvous either, which alone would point at the master node1.
    result = logs("nccl_ports_rejected-1")
    explained = explain(result, check(item("master_port_blocked", "node2", "node2 cannot reach the rendezvous"),
                                      item("peer_ports_blocked", "node2", "node1's connections to node2 are rejected",
                                           "open node2's ephemeral range")))
    root = explained["findings"][0]
    assert root["host"] == "node2" and root["explained_by"] == ["peer_ports_blocked", "master_port_blocked"]
    assert root["fix"] == "open node2's ephemeral range"
