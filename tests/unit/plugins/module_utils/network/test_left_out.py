"""network.left_out: the hosts that failed earlier or have no cluster address, once for both roles."""

from __future__ import annotations

from ansible_collections.ncclkit.cluster.plugins.module_utils.network.left_out import hosts_left_out


def test_every_host_running_and_addressed_leaves_none_out():
    assert hosts_left_out(["n1", "n2"], ["n1", "n2"], ["n1", "n2"]) == []


def test_failed_and_unaddressed_hosts_are_named_once_sorted():
    assert hosts_left_out(["n3", "n1", "n2", "n4"], ["n1", "n2", "n4"], ["n1", "n3", "n4"]) == ["n2", "n3"]


def test_a_failed_host_that_has_an_address_is_still_left_out():
    assert hosts_left_out(["n1", "n2"], ["n1"], ["n1", "n2"]) == ["n2"]
