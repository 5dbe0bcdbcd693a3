"""module_utils.nccl_launch: node ranks, master, slots, hostfile and forwarded names."""

import re

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.profile.launch import (
    LaunchError,
    hostfile_lines,
    launch_plan,
    plan_problems,
    uniform_names,
)

HOSTS = ["gpu-b", "gpu-a", "gpu-c"]   # inventory order, not alphabetical
ADDRESSES = {"gpu-a": "10.0.0.12", "gpu-b": "10.0.0.11", "gpu-c": "10.0.0.13"}
SLOTS = {"gpu-a": 8, "gpu-b": 8, "gpu-c": "4"}


def test_ranks_follow_the_inventory_order_and_the_first_host_is_master():
    plans = {host: launch_plan(host, HOSTS, ADDRESSES, SLOTS, 29500) for host in HOSTS}
    assert [plans[host]["node_rank"] for host in HOSTS] == [0, 1, 2]
    assert {plan["master_addr"] for plan in plans.values()} == {"10.0.0.11"}
    assert plans["gpu-c"] == {"nnodes": 3, "node_rank": 2, "master_addr": "10.0.0.11",
                              "master_port": 29500, "nproc_per_node": 4, "world_size": 20}


def test_the_hostfile_lists_cluster_addresses_with_slots_in_rank_order():
    assert hostfile_lines(HOSTS, ADDRESSES, SLOTS) == [
        "10.0.0.11 slots=8", "10.0.0.12 slots=8", "10.0.0.13 slots=4"]


@pytest.mark.parametrize("addresses, slots, port, message", [
    ({**ADDRESSES, "gpu-c": ""}, SLOTS, 29500, "gpu-c has no cluster address (''): run nccl_preflight"),
    ({**ADDRESSES, "gpu-c": "10.0.0.11"}, SLOTS, 29500,
     "gpu-c and gpu-b share the cluster address 10.0.0.11"),
    (ADDRESSES, {**SLOTS, "gpu-a": 0}, 29500, "gpu-a has 0 processes per node; it needs 1 or more"),
    (ADDRESSES, SLOTS, 70000, "the master port 70000 is not a port (1-65535): set nccl_profile_master_port"),
    (ADDRESSES, SLOTS, True, "is not a port"),
])
def test_inconsistent_facts_are_refused(addresses, slots, port, message):
    assert any(message in problem for problem in plan_problems(HOSTS, addresses, slots, port))
    with pytest.raises(LaunchError, match=re.escape(message)):
        launch_plan("gpu-a", HOSTS, addresses, slots, port)


def test_a_host_outside_the_cluster_is_refused():
    with pytest.raises(LaunchError, match="gpu-z is not one of the cluster's hosts"):
        launch_plan("gpu-z", HOSTS, ADDRESSES, SLOTS, 29500)


def test_only_names_equal_on_every_host_are_forwarded():
    envs = [{"NCCL_SOCKET_IFNAME": "=eth1", "NCCL_IB_DISABLE": "1", "GLOO_SOCKET_IFNAME": "eth1"},
            {"NCCL_SOCKET_IFNAME": "=ens5", "NCCL_IB_DISABLE": "1", "GLOO_SOCKET_IFNAME": "ens5"},
            {"NCCL_SOCKET_IFNAME": "=eth1", "NCCL_IB_DISABLE": "1"}]
    assert uniform_names(envs) == ["NCCL_IB_DISABLE"]
    assert uniform_names(envs[:1]) == ["GLOO_SOCKET_IFNAME", "NCCL_IB_DISABLE", "NCCL_SOCKET_IFNAME"]
    assert uniform_names([]) == []
