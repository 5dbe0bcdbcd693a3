"""Who probes whom: expected_probers is the inverse of probe_peers, worked out in O(N) per host."""

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.network.reachability.plan import (
    expected_probers,
    probe_peers,
)


@pytest.mark.parametrize("mode", ["ring", "full"])
def test_expected_probers_are_exactly_the_hosts_whose_peers_hold_me(mode):
    for count in range(1, 13):
        hosts = [f"node{i}" for i in range(count)]
        for me in hosts:
            brute_force = [host for host in hosts if host != me and me in probe_peers(hosts, host, mode)]
            assert expected_probers(hosts, me, mode) == brute_force, (count, me)


def test_a_ring_host_is_probed_by_its_two_neighbours_and_the_first_by_all():
    hosts = [f"node{i}" for i in range(10000)]
    assert expected_probers(hosts, "node5000") == ["node4999", "node5001"]
    assert len(expected_probers(hosts, "node0")) == 9999
    with pytest.raises(ValueError, match="not one of"):
        expected_probers(hosts, "node1", "mesh")
