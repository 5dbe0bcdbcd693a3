import pytest

from ansible_collections.ncclkit.cluster.plugins.filter.network import (
    reachability_hosts,
    reachability_ports,
    reachability_report,
)
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.ports import PortError


def nic(name, address, mtu=1500, loopback=False):
    return {"name": name, "ipv4": [{"address": address, "prefix": 24}], "mtu": mtu, "loopback": loopback}


HOSTVARS = {
    "node1": {"ncclkit_cluster_ifname": "eth1", "ncclkit_cluster_ip": "198.19.0.11",
              "nccl_preflight_nics": [nic("lo", "127.0.0.1", loopback=True), nic("eth0", "198.18.0.11"),
                                      nic("eth1", "198.19.0.11", mtu=9000), nic("docker0", "172.17.0.1")]},
    "node2": {"ncclkit_cluster_ifname": "eth1", "ncclkit_cluster_ip": "198.19.0.12",
              "nccl_preflight_nics": [nic("eth0", "198.18.0.12"), nic("eth1", "198.19.0.12")]},
}


def test_hosts_carry_address_mtu_and_other_addresses():
    found = reachability_hosts(HOSTVARS, ["node1", "node2"])
    assert found[0] == {"name": "node1", "address": "198.19.0.11", "ifname": "eth1", "mtu": 9000,
                        "alternates": [{"address": "198.18.0.11", "ifname": "eth0"}]}
    assert found[1]["mtu"] == 1500 and found[1]["alternates"] == [{"address": "198.18.0.12", "ifname": "eth0"}]


def test_ports_plan_and_its_errors():
    plan = reachability_ports([32768, 60999], [29500, 29400], 1)
    assert plan["listen_ports"] == [29400, 29500, 32768, 46883, 60999] and plan["iperf3_port"] == 32769
    with pytest.raises(PortError, match="nccl_network_master_port"):
        reachability_ports([32768, 60999], [22])


def test_report_reads_each_hosts_registered_result():
    hostvars = {"node1": {"__nccl_network_reachability": {"reachability": {"host": "node1", "probes": [],
                                                                           "listeners": {}}}},
                "node2": {}}
    judged = reachability_report(hostvars, ["node1", "node2"], reachability_hosts(HOSTVARS, ["node1", "node2"]))
    assert [(v["code"], v["target"]) for v in judged["verdicts"]] == [("no_result", "node2")]
