"""Cluster NIC choice (module_utils.cluster_nic) and the filter that runs it on the controller."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.ncclkit.cluster.plugins.filter.network import cluster_nic
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.cluster_nic import (
    ClusterNicError,
    choose_cluster_nic,
)


def nic(name, *addresses, default_route=False, up=True):
    ipv4 = [{"address": a.split("/")[0], "prefix": int(a.split("/")[1])} for a in addresses]
    return {"name": name, "ipv4": ipv4, "mtu": 1500, "up": up, "loopback": name == "lo",
            "default_route": default_route}


def autodl_host(public, private):
    # AutoDL-like: eth0 the public /32-ish side with the default route, eth1 the private network.
    return [nic("lo", "127.0.0.1/8"), nic("eth0", f"{public}/32", default_route=True),
            nic("eth1", f"{private}/24"), nic("docker0", "172.17.0.1/16")]


CLUSTER = {
    "node1": autodl_host("198.18.0.11", "198.19.0.11"),
    "node2": autodl_host("198.18.0.12", "198.19.0.12"),
    "node3": autodl_host("198.18.0.13", "198.19.0.13"),
}


def test_the_private_network_holding_every_peer_is_chosen():
    for host in CLUSTER:
        chosen = choose_cluster_nic(host, CLUSTER)
        assert chosen["ifname"] == "eth1"
        assert chosen["network"] == "198.19.0.0/24"
    assert choose_cluster_nic("node2", CLUSTER)["address"] == "198.19.0.12"


def test_docker_bridges_shared_by_every_host_never_qualify():
    # Every host has docker0 172.17.0.1/16; the peers' docker0 addresses are in that network.
    assert all(choose_cluster_nic(h, CLUSTER)["ifname"] != "docker0" for h in CLUSTER)


def test_two_qualifying_nics_fail_listing_interfaces_and_the_variable():
    shared = {h: nics + [nic("eth2", f"198.20.0.{i}/24")]
              for i, (h, nics) in enumerate(CLUSTER.items(), start=1)}
    with pytest.raises(ClusterNicError) as error:
        choose_cluster_nic("node1", shared)
    message = str(error.value)
    assert "more than one NIC" in message and "eth1 (198.19.0.11/24)" in message
    assert "node2: eth0 198.18.0.12/32" in message
    assert "nccl_preflight_ifname" in message and "nccl_preflight_cluster_cidr" in message


def test_no_common_network_fails():
    split = dict(CLUSTER, node3=autodl_host("198.18.0.13", "198.21.0.13"))
    with pytest.raises(ClusterNicError, match="node1 has no NIC whose network holds every other host"):
        choose_cluster_nic("node1", split)


def test_cluster_cidr_and_ifname_settle_it():
    assert choose_cluster_nic("node1", CLUSTER, cluster_cidr="198.18.0.0/24")["ifname"] == "eth0"
    assert choose_cluster_nic("node1", CLUSTER, ifname="docker0")["address"] == "172.17.0.1"
    with pytest.raises(ClusterNicError, match="no interface eth9"):
        choose_cluster_nic("node1", CLUSTER, ifname="eth9")
    with pytest.raises(ClusterNicError, match="is not an IPv4 network"):
        choose_cluster_nic("node1", CLUSTER, cluster_cidr="10.0.0.0/99")


def test_down_interfaces_are_not_chosen():
    down = {h: [n if n["name"] != "eth1" else dict(n, up=False) for n in nics] for h, nics in CLUSTER.items()}
    with pytest.raises(ClusterNicError):
        choose_cluster_nic("node1", down)


def test_a_single_host_takes_its_default_route_nic():
    assert choose_cluster_nic("node1", {"node1": CLUSTER["node1"]})["ifname"] == "eth0"


def test_the_filter_returns_the_choice():
    chosen = cluster_nic(CLUSTER, "node3")
    assert (chosen["ifname"], chosen["address"], chosen["network"]) == ("eth1", "198.19.0.13", "198.19.0.0/24")
    assert cluster_nic(CLUSTER, "node1", ifname="docker0")["address"] == "172.17.0.1"


def test_the_filter_fails_with_the_reason():
    with pytest.raises(AnsibleFilterError, match="no interface ib0"):
        cluster_nic(CLUSTER, "node1", ifname="ib0")
    with pytest.raises(AnsibleFilterError, match="run nccl_preflight on every host"):
        cluster_nic(CLUSTER, "node9")


def hostvars_of(cluster, **per_host):
    """What hostvars holds after the survey: NICs and toolchain facts, plus host-specific settings."""
    gpus = [{"name": "NVIDIA H200", "compute_cap": "9.0", "driver_version": "580.1"}] * 2
    return {host: dict({"nccl_preflight_nics": nics, "nccl_preflight_gpus": gpus if host == "node1" else [],
                        "nccl_preflight_gpu_absent_reason": "nvidia-smi not found",
                        "ncclkit_cuda": {"found": True, "version": "13.0"},
                        "ncclkit_nccl": {"found": True, "version": "2.28.9", "source": "torch"},
                        "ncclkit_mpi": {"found": False}}, **per_host.get(host, {}))
            for host, nics in cluster.items()}


def test_cluster_nics_decides_every_host_once_with_its_summary():
    from ansible_collections.ncclkit.cluster.plugins.filter.network import cluster_nics
    chosen = cluster_nics(hostvars_of(CLUSTER), list(CLUSTER))
    assert {host: c["address"] for host, c in chosen.items()} == {
        "node1": "198.19.0.11", "node2": "198.19.0.12", "node3": "198.19.0.13"}
    assert chosen["node1"]["summary"] == (
        "node1: 2 GPUs (NVIDIA H200, sm_90, driver 580.1); cluster NIC eth1 198.19.0.11; "
        "NICs eth0 198.18.0.11/32 mtu 1500 (default route), eth1 198.19.0.11/24 mtu 1500, "
        "docker0 172.17.0.1/16 mtu 1500; CUDA 13.0, NCCL 2.28.9 (torch), no MPI")
    assert chosen["node2"]["summary"].startswith("node2: no GPU (nvidia-smi not found); cluster NIC eth1")


def test_cluster_nics_a_hosts_own_setting_wins_and_a_bad_one_is_that_hosts_error():
    from ansible_collections.ncclkit.cluster.plugins.filter.network import cluster_nics
    hostvars = hostvars_of(CLUSTER, node2={"nccl_preflight_ifname": "eth0"}, node3={"nccl_preflight_ifname": "eth9"})
    chosen = cluster_nics(hostvars, list(CLUSTER), "eth1")
    assert chosen["node1"]["ifname"] == "eth1"      # the play's setting
    assert chosen["node2"]["ifname"] == "eth0"      # its host_vars
    assert "eth9" in chosen["node3"]["error"] and "ifname" not in chosen["node3"]


def test_cluster_nics_refuses_hosts_without_nics_and_non_string_settings():
    from ansible_collections.ncclkit.cluster.plugins.filter.network import cluster_nics
    hostvars = hostvars_of(CLUSTER)
    del hostvars["node3"]["nccl_preflight_nics"]
    with pytest.raises(AnsibleFilterError, match="no NICs read on node3"):
        cluster_nics(hostvars, list(CLUSTER))
    with pytest.raises(AnsibleFilterError, match="nccl_preflight_cluster_cidr must be a string"):
        cluster_nics(hostvars_of(CLUSTER, node1={"nccl_preflight_cluster_cidr": ["10.0.0.0/8"]}), list(CLUSTER))


def test_a_cluster_nic_that_is_down_is_named_as_such():
    cluster = dict(CLUSTER, node2=[nic("lo", "127.0.0.1/8"), nic("eth0", "198.18.0.12/32", default_route=True),
                                   nic("eth1", "198.19.0.12/24", up=False)])
    assert choose_cluster_nic("node1", cluster)["ifname"] == "eth1"
    with pytest.raises(ClusterNicError, match=r"node2's cluster NIC eth1 \(198.19.0.12/24\) is down "
                                              r"\(cluster_nic_down\).*ip link set eth1 up"):
        choose_cluster_nic("node2", cluster)
