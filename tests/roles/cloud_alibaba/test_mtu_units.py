"""One MTU for every host (network.mtu_plan) and where it is kept across reboots (network.mtu_persist)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ansible_collections.ncclkit.cluster.plugins.filter.network import cluster_mtu_plan, mtu_hosts
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.mtu_persist import plan_persist
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.mtu_plan import MtuPlanError, mtu_plan


def hosts(*specs):
    return {f"node{i}": {"ifname": "eth1", "mtu": mtu, "max_mtu": max_mtu, "erdma": erdma}
            for i, (mtu, max_mtu, erdma) in enumerate(specs, 1)}


def test_auto_is_8500_where_jumbo_frames_are_on_and_every_nic_takes_it():
    plan = mtu_plan("auto", hosts((1500, 9000, False), (8500, 9216, False)), jumbo_frames=True)
    assert plan == {"mtu": 8500, "changes": {"node1": [1500, 8500]}}
    assert mtu_plan("auto", hosts((1500, 1500, False), (1500, 9000, False)), jumbo_frames=True)["mtu"] == 1500


def test_auto_keeps_the_current_mtu_when_jumbo_frames_are_unknown():
    # No API answer and no eRDMA: a NIC that takes 9000 does not say the VPC carries 8500.
    assert mtu_plan("auto", hosts((1500, 9000, False), (1500, 9216, False))) == {"mtu": 1500, "changes": {}}
    assert mtu_plan("auto", hosts((8500, 9000, False), (8500, 9216, False))) == {"mtu": 8500, "changes": {}}
    # Hosts that differ: the smallest, which every path already carries.
    assert mtu_plan("auto", hosts((1500, 9000, False), (8500, 9216, False))) == {
        "mtu": 1500, "changes": {"node2": [8500, 1500]}}
    assert mtu_plan("auto", hosts((8500, 9000, False)), jumbo_frames=False) == {
        "mtu": 1500, "changes": {"node1": [8500, 1500]}}


def test_erdma_is_8500_with_jumbo_frames_and_1400_without():
    both = hosts((1500, 9000, True), (1500, 9000, True))
    assert mtu_plan("auto", both, jumbo_frames=True)["mtu"] == 8500
    assert mtu_plan("auto", both, jumbo_frames=False)["mtu"] == 1400
    with pytest.raises(MtuPlanError, match="whether the instances have jumbo frames on is unknown"):
        mtu_plan("auto", both)


@pytest.mark.parametrize("wanted,specs,jumbo,message", [
    (9000, [(1500, 9000, False), (1500, 8500, False)], None,
     "above what the NIC takes on node2 (eth1 takes at most 8500)"),
    (9000, [(1500, 9216, True)], True, "with jumbo frames on the MTU must be 8500, not 9000"),
    (1500, [(1500, 9216, True)], None, "must be 8500 or 1400, not 1500"),
    (8500, [(1500, 9216, False)], False, "needs jumbo frames, which the instances have off"),
    ("big", [(1500, 9216, False)], None, "give auto or a number"),
])
def test_an_mtu_that_does_not_fit_stops_before_any_change(wanted, specs, jumbo, message):
    with pytest.raises(MtuPlanError, match=re.escape(message)) as raised:
        mtu_plan(wanted, hosts(*specs), jumbo)
    assert "No host was changed" in str(raised.value) or "give auto" in str(raised.value)
    assert cluster_mtu_plan(wanted, hosts(*specs), str(jumbo).lower() if jumbo is not None else "auto")["error"]


def test_the_hosts_come_from_preflight_and_fabric_facts():
    hostvars = {"node1": {"ncclkit_cluster_ifname": "eth1",
                          "nccl_preflight_rdma_ports": ["rocep0s5|1|4: ACTIVE|Ethernet|erdma"],
                          "nccl_preflight_nics": [{"name": "eth0", "mtu": 1500},
                                                  {"name": "eth1", "mtu": 8500, "max_mtu": 9000}]},
                "node2": {"ncclkit_cluster_ifname": "eth1", "nccl_preflight_nics": [{"name": "eth1", "mtu": 1500}]}}
    assert mtu_hosts(hostvars, ["node1", "node2"]) == {
        "node1": {"ifname": "eth1", "mtu": 8500, "max_mtu": 9000, "erdma": True},
        "node2": {"ifname": "eth1", "mtu": 1500, "max_mtu": 0, "erdma": False}}


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# cloud-init's netplan on Alibaba Cloud Linux / Ubuntu images (shape of /etc/netplan/50-cloud-init.yaml).
CLOUD_INIT_NETPLAN = """# This file is generated from information provided by the datasource.
network:
    ethernets:
        eth0:
            dhcp4: true
            match:
                macaddress: 00:16:3e:00:00:01
            set-name: eth0
        eth1:
            dhcp4: true
            match:
                macaddress: 00:16:3e:00:00:02
            set-name: eth1
    version: 2
"""


def test_netplan_gets_a_file_of_its_own_after_cloud_init(tmp_path):
    write(tmp_path, "etc/netplan/50-cloud-init.yaml", CLOUD_INIT_NETPLAN)
    plan = plan_persist(str(tmp_path), "eth1", 8500)
    assert plan["manager"] == "netplan"
    (path, text), = plan["files"].items()
    assert path.endswith("etc/netplan/99-ncclkit-mtu.yaml")
    assert "    eth1:\n      mtu: 8500\n" in text and "eth0" not in text


def test_netplan_by_match_name_keeps_the_id(tmp_path):
    write(tmp_path, "etc/netplan/01-net.yaml",
          "network:\n  version: 2\n  ethernets:\n    cluster:\n      match:\n        name: eth1\n      dhcp4: true\n")
    text, = plan_persist(str(tmp_path), "eth1", 8500)["files"].values()
    assert "    cluster:\n      mtu: 8500\n" in text


def test_systemd_networkd_gets_a_drop_in(tmp_path):
    network = write(tmp_path, "etc/systemd/network/10-eth1.network", "[Match]\nName=eth1 eth2\n\n[Network]\nDHCP=yes\n")
    plan = plan_persist(str(tmp_path), "eth1", 8500)
    assert plan == {"manager": "systemd-networkd",
                    "files": {str(network) + ".d/ncclkit-mtu.conf":
                              "# Written by ncclkit.cluster (cloud_alibaba): the cluster NIC's MTU.\n"
                              "[Link]\nMTUBytes=8500\n"}}


def test_ifcfg_replaces_its_mtu_line(tmp_path):
    write(tmp_path, "etc/sysconfig/network-scripts/ifcfg-eth1", "DEVICE=eth1\nBOOTPROTO=dhcp\nMTU=1500\nONBOOT=yes\n")
    text, = plan_persist(str(tmp_path), "eth1", 8500)["files"].values()
    assert text == "DEVICE=eth1\nBOOTPROTO=dhcp\nONBOOT=yes\nMTU=8500\n"


def test_ifupdown_puts_mtu_in_the_nics_stanza_only(tmp_path):
    write(tmp_path, "etc/network/interfaces",
          "auto lo\niface lo inet loopback\n\nauto eth1\niface eth1 inet dhcp\n    mtu 1500\n\n"
          "auto eth2\niface eth2 inet dhcp\n")
    text, = plan_persist(str(tmp_path), "eth1", 8500)["files"].values()
    assert text == ("auto lo\niface lo inet loopback\n\nauto eth1\niface eth1 inet dhcp\n    mtu 8500\n\n"
                    "auto eth2\niface eth2 inet dhcp\n")


def test_networkmanager_or_nothing(tmp_path):
    assert plan_persist(str(tmp_path), "eth1", 8500, nmcli=True) == {"manager": "NetworkManager", "files": {}}
    assert plan_persist(str(tmp_path), "eth1", 8500) == {"manager": "none", "files": {}}
