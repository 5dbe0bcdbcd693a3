import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.network.ports import (
    PortError,
    check_port,
    covers,
    describe,
    merge_ports,
    parse_port_range,
    sample_ports,
)
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.reachability.plan import (
    bandwidth_peer,
    expected_probers,
    plan_ports,
    probe_peers,
)


def test_port_ranges_in_every_spelling():
    assert parse_port_range([32768, 60999]) == (32768, 60999)
    assert parse_port_range("40000 - 41000") == (40000, 41000)
    assert parse_port_range(("1024", "65535")) == (1024, 65535)


@pytest.mark.parametrize("value", [[60999, 32768], [80, 9000], [32768], "a-b", None, [32768, 70000]])
def test_bad_port_ranges_name_the_variable(value):
    with pytest.raises(PortError, match="nccl_network_port_range"):
        parse_port_range(value)


def test_single_ports_are_checked():
    assert check_port("29500", "nccl_network_master_port") == 29500
    for bad in (22, 0, 70000, "x", True):
        with pytest.raises(PortError, match="nccl_network_master_port"):
            check_port(bad, "nccl_network_master_port")


def test_samples_are_the_ends_and_evenly_spaced_ports():
    assert sample_ports(32768, 60999, 3) == [32768, 39825, 46883, 53941, 60999]
    assert sample_ports(40000, 40002, 5) == [40000, 40001, 40002]
    assert sample_ports(40000, 50000, 0) == [40000, 50000]


def test_ports_merge_into_spans():
    spans = merge_ports([29500, 29501, 40000], [(32768, 60999), (29400, 29499)])
    assert spans == [(29400, 29501), (32768, 60999)]
    assert covers(spans, 29450) and not covers(spans, 30000)
    assert describe(spans) == "29400-29501, 32768-60999"
    assert describe(spans, joiner=",", dash=":") == "29400:29501,32768:60999"


def test_ring_probes_neighbours_and_the_first_host():
    hosts = [f"n{i}" for i in range(6)]
    assert probe_peers(hosts, "n3") == ["n4", "n2", "n0"]
    assert probe_peers(hosts, "n0") == ["n1", "n5"]
    assert probe_peers(hosts, "n5") == ["n0", "n4"]
    assert probe_peers(["a", "b"], "a") == ["b"]
    assert probe_peers(["a"], "a") == []
    # O(N): at most three peers each, however large the cluster.
    big = [f"h{i}" for i in range(1000)]
    assert max(len(probe_peers(big, host)) for host in big[::97]) == 3


def test_probers_mirror_the_plan():
    hosts = [f"n{i}" for i in range(5)]
    for mode in ("ring", "full"):
        for me in hosts:
            for prober in expected_probers(hosts, me, mode):
                assert me in probe_peers(hosts, prober, mode)
    assert expected_probers(hosts, "n0") == ["n1", "n2", "n3", "n4"]
    assert expected_probers(hosts, "n2") == ["n1", "n3"]
    assert probe_peers(hosts, "n2", "full") == ["n0", "n1", "n3", "n4"]
    with pytest.raises(ValueError, match="peers mode"):
        probe_peers(hosts, "n1", "star")


def test_bandwidth_goes_round_the_ring_once():
    hosts = ["a", "b", "c"]
    assert [bandwidth_peer(hosts, host) for host in hosts] == ["b", "c", "a"]
    assert bandwidth_peer(["a"], "a") is None


def test_planned_ports_keep_iperf3_off_the_listeners():
    plan = plan_ports(32768, 60999, [29500], between=3)
    assert plan["listen_ports"] == [29500, 32768, 39825, 46883, 53941, 60999]
    assert plan["iperf3_port"] == 32769
    assert plan_ports(40000, 40001, [], between=0)["iperf3_port"] is None
