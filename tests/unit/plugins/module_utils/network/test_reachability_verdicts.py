"""From every host's probe results to a matrix and one verdict per failing pair."""

from ansible_collections.ncclkit.cluster.plugins.module_utils.network.reachability.verdicts import build_report

PORTS = ["29500", "32768", "46883", "60999"]
HOSTS = [{"name": f"node{i}", "address": f"10.0.0.{10 + i}", "ifname": "eth1", "mtu": 1500} for i in (1, 2, 3)]


def probe(peer, ping=True, ping_large=True, ports=None, route_dev="eth1", **extra):
    states = {port: "ok" for port in PORTS}
    states.update(ports or {})
    entry = {"peer": peer, "address": next(h["address"] for h in HOSTS if h["name"] == peer),
             "route_dev": route_dev, "route_error": None, "ping": ping, "ping_large": ping_large,
             "large_size": 1472, "ports": states, "alternates": [], "bandwidth_gbps": 9.4,
             "bandwidth_error": None}
    entry.update(extra)
    return entry


def result(host, probes, mtu=1500, listeners=None, drops=(), links=()):
    states = {port: "ok" for port in PORTS}
    states.update(listeners or {})
    return {"host": host, "mtu": mtu, "listeners": states, "probes": probes,
            "firewall": {"active": [], "drops": list(drops)}, "links": list(links), "nic_speed_mbps": 10000}


def report(results, hosts=HOSTS[:2], **kwargs):
    return build_report(hosts, results, rendezvous_ports=[29500], **kwargs)


def healthy_pair():
    # With two hosts one link test runs, from the first host, both directions at once.
    link = {"round": 0, "target": "node2", "sent_gbps": 9.4, "received_gbps": 9.3, "error": None}
    return {"node1": result("node1", [probe("node2")], links=[link]), "node2": result("node2", [probe("node1")])}


def only(verdicts):
    assert len(verdicts) == 1, verdicts
    return verdicts[0]


def test_a_healthy_pair_passes():
    judged = report(healthy_pair())
    assert judged["passed"] and judged["verdicts"] == []
    assert [(row["source"], row["target"], row["status"]) for row in judged["matrix"]] == [
        ("node1", "node2", "ok"), ("node2", "node1", "ok")]
    assert judged["matrix"][0]["ports_ok"] == [29500, 32768, 46883, 60999]
    assert judged["summary"] == "2/2 probed pairs healthy, 0 error(s), 0 warning(s)"


def test_dropped_ports_name_the_host_and_its_firewall():
    results = healthy_pair()
    results["node1"]["probes"][0]["ports"]["32768"] = "timeout"
    results["node2"]["firewall"]["drops"] = [{"source": "node1", "ports": [32768], "firewall": "nftables",
                                              "where": "table inet filter chain input", "text": "tcp dport 32768 drop",
                                              "kind": "port"}]
    judged = report(results)
    verdict = only(judged["verdicts"])
    assert not judged["passed"]
    assert (verdict["code"], verdict["source"], verdict["target"], verdict["ports"]) == (
        "ports_dropped", "node1", "node2", [32768])
    assert verdict["firewalls"] == ["nftables"]
    assert "node2 drops TCP port 32768 from node1" in verdict["cause"]
    assert "table inet filter chain input: tcp dport 32768 drop" in verdict["message"]
    assert verdict["message"].startswith("ERROR ports_dropped (node1 -> node2)")
    assert judged["matrix"][0]["cause"] == "ports_dropped" and judged["matrix"][1]["status"] == "ok"


def test_drops_the_host_does_not_show_point_at_the_network():
    results = healthy_pair()
    results["node1"]["probes"][0]["ports"].update({"32768": "timeout", "60999": "timeout"})
    verdict = only(report(results)["verdicts"])
    assert "own ruleset shows no rule" in verdict["cause"] and "security group" in verdict["fix"]


def test_refused_ports_with_ncclkit_listening_are_rejected():
    results = healthy_pair()
    results["node2"]["probes"][0]["ports"]["46883"] = "refused"
    verdict = only(report(results)["verdicts"])
    assert (verdict["code"], verdict["source"], verdict["target"]) == ("ports_rejected", "node2", "node1")


def test_which_host_drops_is_inferred_from_all_its_probers():
    results = {
        "node1": result("node1", [probe("node2", ports={"32768": "timeout"}), probe("node3")]),
        "node2": result("node2", [probe("node3"), probe("node1")]),
        "node3": result("node3", [probe("node1"), probe("node2", ports={"32768": "timeout"})]),
    }
    verdicts = report(results, hosts=HOSTS)["verdicts"]
    assert [(v["source"], v["target"]) for v in verdicts] == [("node1", "node2"), ("node3", "node2")]
    assert all("every host that probes node2 is blocked (node1, node3)" in v["cause"] for v in verdicts)
    results["node3"]["probes"][1]["ports"]["32768"] = "ok"
    verdict = only(report(results, hosts=HOSTS)["verdicts"])
    assert verdict["blocked_from"] == ["node1"] and verdict["cause"].endswith("node3 gets through")


def test_mtu_mismatch_names_both_mtus():
    results = healthy_pair()
    results["node1"] = result("node1", [probe("node2", ping_large=False, large_size=8972)], mtu=9000)
    hosts = [dict(HOSTS[0], mtu=9000), HOSTS[1]]
    verdict = only(report(results, hosts=hosts)["verdicts"])
    assert verdict["code"] == "mtu_mismatch"
    assert "node1's eth1 has MTU 9000, node2's eth1 has MTU 1500" in verdict["cause"]
    assert "8972-byte don't-fragment pings from node1 to node2 are lost" in verdict["cause"]
    assert "mtu 1500" in verdict["fix"]


def test_equal_mtus_with_lost_large_pings_blame_the_path():
    results = healthy_pair()
    results["node2"]["probes"][0]["ping_large"] = False
    assert only(report(results)["verdicts"])["code"] == "path_mtu"


def test_wrong_nic_from_the_route_or_from_another_address_that_answers():
    results = healthy_pair()
    results["node1"]["probes"][0]["route_dev"] = "eth0"
    verdict = only(report(results)["verdicts"])
    assert verdict["code"] == "wrong_nic" and "leaves through eth0, not the cluster NIC eth1" in verdict["cause"]
    dead = {port: "timeout" for port in PORTS}
    results = healthy_pair()
    results["node1"]["probes"][0] = probe("node2", ping=False, ports=dead,
                                          alternates=[{"address": "192.168.0.12", "ifname": "eth2", "ping": True}])
    verdict = only(report(results)["verdicts"])
    assert verdict["code"] == "wrong_nic" and "answers node1 at 192.168.0.12 (eth2)" in verdict["cause"]
    assert "nccl_preflight_ifname: eth2" in verdict["fix"]


def test_nothing_gets_through_is_unreachable_and_no_route_is_named():
    dead = {port: "timeout" for port in PORTS}
    results = healthy_pair()
    results["node1"]["probes"][0] = probe("node2", ping=False, ports=dead)
    verdict = only(report(results)["verdicts"])
    assert verdict["code"] == "unreachable" and "no ICMP echo reply and no TCP connection (timeout)" in verdict["cause"]
    results["node1"]["probes"][0] = probe("node2", ping=False, ports=dead, route_dev=None,
                                          route_error="RTNETLINK answers: Network is unreachable")
    assert only(report(results)["verdicts"])["code"] == "no_route"


def test_warnings_do_not_fail_the_check():
    results = healthy_pair()
    results["node1"]["probes"][0]["ping"] = False
    judged = report(results)
    assert judged["passed"] and only(judged["verdicts"])["code"] == "icmp_blocked"
    results = healthy_pair()
    results["node1"]["links"][0].update(sent_gbps=None, received_gbps=None, error="unable to connect to server")
    verdict = only(report(results)["verdicts"])
    assert (verdict["code"], verdict["severity"]) == ("bandwidth_unmeasured", "warning")


def test_a_busy_rendezvous_port_on_the_master_is_an_error_elsewhere_a_warning():
    results = healthy_pair()
    results["node1"]["listeners"]["29500"] = 'in use by (("python3",pid=77,fd=3))'
    results["node2"]["probes"][0]["ports"]["29500"] = "foreign"
    judged = report(results)
    codes = [(v["code"], v["severity"], v["target"]) for v in judged["verdicts"]]
    assert codes == [("port_in_use", "error", "node1"), ("port_in_use", "warning", "node1")]
    assert "python3" in judged["verdicts"][0]["cause"] and "nccl_network_master_port" in judged["verdicts"][0]["fix"]
    results = healthy_pair()
    results["node2"]["listeners"]["29500"] = "in use"
    assert report(results)["passed"]


def test_a_missing_host_and_a_slow_link():
    results = healthy_pair()
    results["node2"] = None
    results["node1"]["links"][0].update(sent_gbps=None, received_gbps=None, error="Connection refused")
    codes = [(v["code"], v["source"], v["target"]) for v in report(results)["verdicts"]]
    assert codes == [("no_result", "node1", "node2"), ("no_result", None, "node2"),
                     ("bandwidth_unmeasured", "node1", "node2")]
    judged = report(healthy_pair(), min_bandwidth_gbps=25)
    assert [v["code"] for v in judged["verdicts"]] == ["slow_link"] and not judged["passed"]
    assert judged["link_bandwidth"]["slow"] == [{"source": "node1", "target": "node2", "gbps": 9.3}]
    assert report(healthy_pair())["link_bandwidth"]["threshold_source"] == "nic_speed"


def test_two_hosts_answering_at_one_address():
    results = healthy_pair()
    results["node1"]["probes"][0]["ports"]["32768"] = "answered by node7"
    verdict = only(report(results)["verdicts"])
    assert verdict["code"] == "address_conflict" and "answered by node7" in verdict["cause"]


def test_hosts_that_failed_before_the_check_are_named():
    judged = build_report(HOSTS[:1], {"node1": result("node1", [])}, left_out=["node2"])
    assert judged["passed"] and [(v["code"], v["target"]) for v in judged["verdicts"]] == [("left_out", "node2")]


def test_a_host_without_ping_is_not_called_unreachable():
    results = healthy_pair()
    results["node1"]["probes"][0].update(ping=None, ping_large=None, route_dev=None)
    assert report(results)["verdicts"] == []


def test_every_verdict_is_a_finding_located_at_its_target():
    results = healthy_pair()
    results["node1"]["probes"][0]["ports"]["32768"] = "timeout"
    results["node2"]["firewall"]["drops"] = [{"source": "node1", "ports": [32768], "firewall": "nftables",
                                              "where": "table inet filter chain input", "text": "tcp dport 32768 drop",
                                              "kind": "port"}]
    verdict = only(report(results, left_out=["node3"])["verdicts"][1:])
    assert (verdict["host"], verdict["rank"], verdict["confidence"], verdict["consequence_of"]) == (
        "node2", None, "high", None)
    assert verdict["evidence"] == ["nftables: table inet filter chain input: tcp dport 32768 drop"]
    left_out = report(healthy_pair(), left_out=["node3"])["verdicts"][0]
    assert (left_out["code"], left_out["host"], left_out["source"], left_out["evidence"]) == (
        "left_out", "node3", None, [])
