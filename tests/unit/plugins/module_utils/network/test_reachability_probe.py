"""The reachability check's engine and module, run for real between loopback addresses."""

import json
import random
import socket
import threading
import time

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.ncclkit.cluster.plugins.module_utils.host.nics import NicReadError
from ansible_collections.ncclkit.cluster.plugins.module_utils.host.routes import RouteError
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.links.rounds import (
    my_clients,
    my_tests,
    round_count,
)
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.reachability.plan import (
    bandwidth_peer,
    expected_probers,
    probe_peers,
)
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.reachability.probe import Check, _listening
from ansible_collections.ncclkit.cluster.plugins.modules import nccl_reachability

# A loopback /24 of its own per run: other test runs on this machine use other ones.
NET = f"127.{random.randint(64, 250)}.{random.randint(1, 250)}"


def free_ports(count, address=f"{NET}.1"):
    sockets = [socket.create_server((address, 0)) for dummy in range(count)]
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def hosts(count):
    return [{"name": f"h{i}", "address": f"{NET}.{i}", "ifname": "lo", "mtu": 1500} for i in range(1, count + 1)]


def params(me, members, ports, **extra):
    names = [host["name"] for host in members]
    values = {"host": me, "hosts": members, "ports": ports, "peers": probe_peers(names, me),
              "probers": expected_probers(names, me), "bandwidth_peer": bandwidth_peer(names, me),
              "iperf3_port": 0, "connect_timeout": 0.5, "startup_grace": 1.0, "barrier_timeout": 5.0}
    values.update(extra)
    return values


def run_all(members, ports, running=None, **extra):
    results = {}
    threads = [threading.Thread(target=lambda h=h: results.__setitem__(h["name"], Check(params(
        h["name"], members, ports, **extra)).run())) for h in members if running is None or h["name"] in running]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return results


def test_three_hosts_reach_each_other_and_finish_together():
    members, ports = hosts(3), free_ports(3)
    start = time.monotonic()
    results = run_all(members, ports, iperf3_port=free_ports(1)[0], iperf3_seconds=1)
    assert time.monotonic() - start < 4
    for name, result in results.items():
        assert result["probers_missing"] == [] and set(result["listeners"].values()) == {"ok"}
        for probe in result["probes"]:
            assert probe["ping"] and probe["ping_large"] and probe["route_dev"] == "lo"
            assert set(probe["ports"].values()) == {"ok"}, (name, probe)
    measured = [p for r in results.values() for p in r["probes"] if p["bandwidth_gbps"] is not None]
    assert len(measured) == 3 and all(p["bandwidth_gbps"] > 0 for p in measured)


def test_link_rounds_measure_both_directions_and_wait_for_every_client():
    members, ports, iperf3_port = hosts(4), free_ports(2), free_ports(1)[0]
    names = [host["name"] for host in members]

    def rounds(me):
        tests, clients = my_tests(names, me, 1, 5), [c for c in my_clients(names, me, 1, 5) if c]
        return {"link_tests": tests, "link_round_count": round_count(4, 1),
                "peers": list(dict.fromkeys(probe_peers(names, me) + [t["target"] for t in tests])),
                "probers": list(dict.fromkeys(expected_probers(names, me) + clients))}

    results = {}
    threads = [threading.Thread(target=lambda h=h: results.__setitem__(h["name"], Check(params(
        h["name"], members, ports, iperf3_port=iperf3_port, iperf3_seconds=1,
        **rounds(h["name"]))).run())) for h in members]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=40)
    assert sorted(results) == names
    for name, result in results.items():
        assert [link["round"] for link in result["links"]] == [0, 1], result["links"]
        for link in result["links"]:
            assert link["error"] is None and link["sent_gbps"] > 0 and link["received_gbps"] > 0, (name, link)
        assert result["probers_missing"] == []
        ring = next(p for p in result["probes"] if p["peer"] == result["links"][0]["target"])
        assert ring["bandwidth_gbps"] == result["links"][0]["sent_gbps"]
        assert "nic_speed_mbps" in result and result["nic_speed_mbps"] is None   # lo reports no speed


def test_a_peer_that_never_comes_is_refused_and_waited_for_until_the_barrier():
    members, ports = hosts(2), free_ports(2)
    start = time.monotonic()
    result = run_all(members, ports, running={"h1"}, startup_grace=0.6, barrier_timeout=1.5)["h1"]
    elapsed = time.monotonic() - start
    assert 1.4 < elapsed < 4
    assert set(result["probes"][0]["ports"].values()) == {"refused"}
    assert result["probers_missing"] == ["h2"]


def test_a_port_held_by_another_process_is_told_apart():
    members, ports = hosts(2), free_ports(2)
    squatter = socket.create_server((f"{NET}.2", ports[0]))
    try:
        results = run_all(members, ports)
    finally:
        squatter.close()
    assert results["h2"]["listeners"][str(ports[0])].startswith("in use")
    assert results["h1"]["probes"][0]["ports"] == {str(ports[0]): "foreign", str(ports[1]): "ok"}
    assert results["h2"]["probers_missing"] == [] and results["h1"]["probers_missing"] == []


def test_the_module_returns_one_hosts_results(capsys):
    members, ports = hosts(2), free_ports(1)
    args = {"host": "h1", "hosts": members, "ports": ports, "connect_timeout": 0.3, "startup_grace": 0.3,
            "barrier_timeout": 0.8, "_ansible_check_mode": True}
    with patch_module_args(args), pytest.raises(SystemExit) as exit_info:
        nccl_reachability.main()
    result = json.loads(capsys.readouterr().out)
    assert exit_info.value.code == 0 and result["changed"] is False
    reach = result["reachability"]
    assert reach["probers"] == ["h2"] and reach["probes"][0]["peer"] == "h2"
    assert set(reach["firewall"]) == {"active", "drops"}


def test_the_module_refuses_unknown_hosts_and_missing_addresses(capsys):
    for members, message in ((hosts(2), "host h9 is not among hosts"),
                             ([{"name": "h9", "address": None}], "without a cluster address: h9")):
        with patch_module_args({"host": "h9", "hosts": members, "ports": [40000]}), pytest.raises(SystemExit):
            nccl_reachability.main()
        result = json.loads(capsys.readouterr().out)
        assert result["failed"] and message in result["msg"]


def test_missing_tools_are_unknown_not_failures():
    def missing(argv, timeout):
        return (127, "", f"{argv[0]}: command not found")

    def no_netlink(destination, source):
        raise NicReadError("cannot open a netlink socket to look up routes: [Errno 97]")

    def no_route(destination, source):
        raise RouteError("Network is unreachable")

    check = Check(params("h1", hosts(2), [40000]), command=missing, routes=no_netlink)
    assert check.ping(f"{NET}.2", None) is None
    assert check.route_to(f"{NET}.2") == {"route_dev": None, "route_error": None}
    lost = Check(params("h1", hosts(2), [40000]), command=lambda argv, timeout: (1, "", ""), routes=no_route)
    assert lost.ping(f"{NET}.2", 1472) is False
    assert lost.route_to(f"{NET}.2") == {"route_dev": None, "route_error": "Network is unreachable"}


def test_the_route_is_read_from_the_kernel_without_running_ip():
    def no_commands(argv, timeout):
        raise AssertionError(f"ran {argv}")

    check = Check(params("h1", hosts(2), [40000]), command=no_commands)
    assert check.route_to(f"{NET}.2") == {"route_dev": "lo", "route_error": None}


def iperf3_json(sent, back):
    return json.dumps({"end": {"sum_received": {"bits_per_second": sent * 1e9},
                               "sum_received_bidir_reverse": {"bits_per_second": back * 1e9}}})


def test_a_test_far_below_the_hosts_own_figures_is_run_again_and_the_better_figure_counts():
    members = hosts(4)
    answers = {f"{NET}.2": [(9.0, 9.0)], f"{NET}.3": [(1.0, 9.0), (8.0, 8.5)], f"{NET}.4": [(0.1, 9.0), (0.2, 9.0)]}
    asked = []

    def iperf3(argv, timeout):
        assert argv[0] == "iperf3" and "--bidir" in argv and argv[argv.index("-B") + 1] == f"{NET}.1"
        address = argv[argv.index("-c") + 1]
        asked.append(address)
        return 0, iperf3_json(*answers[address].pop(0)), ""

    tests = [{"round": r, "target": f"h{r + 2}"} for r in range(3)]
    check = Check(params("h1", members, [40000], iperf3_port=40001, link_tests=tests, link_gate_fraction=0.5),
                  command=iperf3)
    links = check.measure_links()
    assert asked == [f"{NET}.2", f"{NET}.3", f"{NET}.4", f"{NET}.3", f"{NET}.4"]
    assert [(link["target"], link["sent_gbps"], link["received_gbps"], link["attempts"]) for link in links] == [
        ("h2", 9.0, 9.0, 1), ("h3", 8.0, 9.0, 2), ("h4", 0.2, 9.0, 2)]
    never = Check(params("h1", members, [40000], iperf3_port=40001, link_tests=tests[:1]), command=iperf3)
    answers[f"{NET}.2"] = [(0.1, 0.1)]
    assert never.measure_links()[0]["attempts"] == 1


def test_a_busy_server_is_asked_again_and_an_old_iperf3_measures_one_way():
    members = hosts(2)
    replies = [json.dumps({"error": "the server is busy running a test. try again later"}),
               json.dumps({"error": "iperf3: unrecognized option '--bidir'"}),
               json.dumps({"end": {"sum_received": {"bits_per_second": 2e9}}})]
    seen = []

    def iperf3(argv, timeout):
        seen.append("--bidir" in argv)
        return 1 if "error" in replies[0] else 0, replies.pop(0), ""

    check = Check(params("h1", members, [40000], iperf3_port=40001, link_tests=[{"round": 0, "target": "h2"}]),
                  command=iperf3)
    assert check.measure_links() == [{"round": 0, "target": "h2", "sent_gbps": 2.0, "received_gbps": None,
                                      "error": None, "attempts": 1}]
    assert seen == [True, True, False]


def test_only_a_nic_backed_by_a_device_has_a_speed(tmp_path):
    for name, speed, device in (("eth1", "25000", True), ("veth0", "10000", False), ("ens5", "-1", True),
                                ("bad", "x", True)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "speed").write_text(speed + "\n")
        if device:
            (tmp_path / name / "device").mkdir()
    found = {}
    for name in ("eth1", "veth0", "ens5", "bad", "missing"):
        members = [dict(host, ifname=name) for host in hosts(2)]
        found[name] = Check(params("h1", members, [40000])).nic_speed_mbps(str(tmp_path))
    assert found == {"eth1": 25000, "veth0": None, "ens5": None, "bad": None, "missing": None}


def test_the_module_plans_its_link_tests_and_says_when_one_fails(capsys):
    members, ports = hosts(2), free_ports(2)
    args = {"host": "h1", "hosts": members, "ports": ports[:1], "iperf3_port": ports[1], "iperf3_rounds": 2,
            "connect_timeout": 0.3, "startup_grace": 0.3, "barrier_timeout": 0.8, "_ansible_check_mode": True}
    with patch_module_args(args), pytest.raises(SystemExit):
        nccl_reachability.main()
    reach = json.loads(capsys.readouterr().out)["reachability"]
    assert [(link["round"], link["target"], link["sent_gbps"]) for link in reach["links"]] == [(0, "h2", None)]
    assert reach["links"][0]["error"] and reach["probes"][0]["bandwidth_error"] == reach["links"][0]["error"]
    with patch_module_args(dict(args, iperf3_rounds=-1)), pytest.raises(SystemExit):
        nccl_reachability.main()
    assert "iperf3_rounds must be 0 or more" in json.loads(capsys.readouterr().out)["msg"]


def test_listening_reads_the_kernel_s_table_of_listening_sockets():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    port = server.getsockname()[1]
    assert not _listening(port)   # bound, not yet listening
    server.listen(1)
    assert _listening(port)
    server.close()
    assert not _listening(port)
