"""nccl_network on a 2-node lab with an outsider (lab index 20): check mode, the rules at work,
a port blocked by hand, an MTU mismatch, a reboot, and `absent`."""

from __future__ import annotations

from contextlib import ExitStack

import pytest
from lab_helpers import needs_root
from lab_indices import lab_index
from network_helpers import Listeners, facts, lab_with_outsider, play, reachable, sh

pytestmark = [pytest.mark.lab, needs_root]

INDEX = lab_index(__file__)
NODES = ("node1", "node2")
NCCL_PORTS = [32768, 46883, 60999, 29500]
USER_TABLE = ("table inet userkeep { chain input { type filter hook input priority 0; policy accept; "
              "tcp dport 8080 accept; }; }")
NCCLKIT_FILES = "/etc/ncclkit /etc/sysctl.d/99-zz-ncclkit-nccl.conf /etc/systemd/system/ncclkit-firewall.service"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    folder = tmp_path_factory.mktemp(f"lab{INDEX}")
    # ExitStack, not `with` on the generator-based context manager: pylint's cleanup check.
    with ExitStack() as stack:
        yield stack.enter_context(lab_with_outsider(INDEX, 2, folder, dict.fromkeys(NODES, f"nft '{USER_TABLE}'")))


@pytest.fixture(scope="module")
def converged(lab):
    result = play(lab.inventory)
    assert result.rc == 0, result.stdout[-3000:]
    return result


def private_ip(node):
    return f"198.19.{INDEX}.{10 + int(node[-1])}"


def test_check_mode_shows_the_rules_and_changes_nothing(lab):
    result = play(lab.inventory, "--check", "--diff", structured=False)
    assert result.rc == 0, result.stdout[-3000:]
    assert "+table inet ncclkit {" in result.stdout
    assert "+\t\telements = { 198.19.20.11, 198.19.20.12 }" in result.stdout
    for node in NODES:
        assert "ncclkit" not in sh(lab, node, "nft list tables")
        assert sh(lab, node, f"ls -d {NCCLKIT_FILES} 2>/dev/null || true") == ""


def test_the_cluster_nic_is_eth1_although_the_hostname_resolves_to_eth0(lab, converged):
    # Decided once for the play: one task on the first host, an item (and its facts) per host.
    choice = converged.task("Choose the NIC whose network holds the other hosts")
    chosen = {item["item"]: item["ansible_facts"] for result in choice.values() for item in result["results"]}
    assert set(chosen) == set(NODES)
    for node in NODES:
        assert sh(lab, node, f"getent hosts {node}").split()[0] == f"198.18.{INDEX}.{10 + int(node[-1])}"
        assert chosen[node]["ncclkit_cluster_ifname"] == "eth1"
        assert chosen[node]["ncclkit_cluster_ip"] == private_ip(node)


def test_the_cluster_reaches_nccl_ports_and_the_outsider_does_not(lab, converged):
    network = facts(converged, "node1")
    assert network["passed"] and network["firewall"] == "nftables" and network["port_range"] == [32768, 60999]
    assert {(row["source"], row["target"]) for row in network["reachability"]} == {("node1", "node2"),
                                                                                   ("node2", "node1")}
    listeners = Listeners(lab, NODES, NCCL_PORTS + [8080])
    try:
        assert reachable(lab, "node1", private_ip("node2"), NCCL_PORTS) == dict.fromkeys(NCCL_PORTS, True)
        assert reachable(lab, "node2", private_ip("node1"), NCCL_PORTS) == dict.fromkeys(NCCL_PORTS, True)
        from_outside = reachable(lab, "outsider", private_ip("node1"), NCCL_PORTS + [8080, 22])
        assert from_outside == {**dict.fromkeys(NCCL_PORTS, False), 8080: True, 22: True}
    finally:
        listeners.close()
    for node in NODES:
        assert sh(lab, node, "sysctl -n net.ipv4.ip_local_port_range").split() == ["32768", "60999"]
        assert "tcp dport 8080 accept" in sh(lab, node, "nft list table inet userkeep")


def test_a_reboot_restores_the_rules(lab, converged):
    before = sh(lab, "node2", "nft list table inet ncclkit")
    sh(lab, "node2", "nft delete table inet ncclkit")
    sh(lab, "node2", "sh /etc/ncclkit/firewall.sh")
    assert sh(lab, "node2", "nft list table inet ncclkit") == before
    unit = sh(lab, "node2", "cat /etc/systemd/system/ncclkit-firewall.service")
    assert "ExecStart=/bin/sh /etc/ncclkit/firewall.sh" in unit and "After=local-fs.target nftables.service" in unit
    assert sh(lab, "node2", "readlink /etc/systemd/system/sysinit.target.wants/ncclkit-firewall.service").strip() \
        == "/etc/systemd/system/ncclkit-firewall.service"


def test_a_port_blocked_by_hand_fails_the_check_naming_the_host_and_firewall(lab, converged):
    sh(lab, "node2", "nft 'table inet handblock { chain input { type filter hook input priority 0; "
                     "tcp dport 46883 drop; }; }'")
    try:
        result = play(lab.inventory, "--tags", "nccl_preflight,nccl_network_diagnose")
    finally:
        sh(lab, "node2", "nft delete table inet handblock")
    assert result.rc != 0
    verdicts = facts(result, "node1")["verdicts"]
    assert [(v["code"], v["source"], v["target"], v["ports"]) for v in verdicts] == [
        ("ports_dropped", "node1", "node2", [46883])]
    assert verdicts[0]["firewalls"] == ["nftables"]
    assert "table inet handblock chain input: tcp dport 46883 drop" in verdicts[0]["cause"]
    failed = result.task("Fail when the cluster network is broken")
    assert all("ports_dropped (node1 -> node2)" in failed[node]["msg"] for node in NODES)
    seconds = result.duration("Probe the cluster network from every host at once",
                              "Fail when the cluster network is broken")
    assert seconds < 15, f"the check took {seconds:.1f} s"


def test_an_mtu_mismatch_is_named_in_the_last_lines(lab, converged):
    sh(lab, "node1", "ip link set eth1 mtu 9000")
    try:
        result = play(lab.inventory, "--tags", "nccl_preflight,nccl_network_diagnose", structured=False)
    finally:
        sh(lab, "node1", "ip link set eth1 mtu 1500")
    assert result.rc != 0
    before_recap = result.stdout.split("PLAY RECAP")[0].strip().splitlines()[-30:]
    tail = " ".join(line.strip() for line in before_recap)
    assert "mtu_mismatch (node1 -> node2)" in tail
    assert "node1's eth1 has MTU 9000, node2's eth1 has MTU 1500" in tail


def test_the_public_nic_is_named_as_the_wrong_nic(lab, converged):
    # The wrong-NIC failure: eth0 (where the hostname resolves) carries no node-to-node traffic.
    result = play(lab.inventory, "--tags", "nccl_preflight,nccl_network_diagnose",
                  variables={"nccl_preflight_ifname": "eth0"})
    assert result.rc != 0
    verdicts = facts(result, "node1")["verdicts"]
    assert [(v["code"], v["source"], v["target"]) for v in verdicts] == [("wrong_nic", "node1", "node2"),
                                                                         ("wrong_nic", "node2", "node1")]
    assert "node2 answers node1 at 198.19.20.12 (eth1) but not at its cluster address 198.18.20.12 (eth0)" \
        in verdicts[0]["cause"]
    assert "nccl_preflight_ifname: eth1" in verdicts[0]["fix"]


def test_absent_removes_exactly_what_ncclkit_added(lab, converged):
    result = play(lab.inventory, variables={"nccl_network_state": "absent"})
    assert result.rc == 0 and all(result.changed().values())
    for node in NODES:
        assert sh(lab, node, "nft list tables").split() == ["table", "inet", "userkeep"]
        assert sh(lab, node, f"ls -d {NCCLKIT_FILES} 2>/dev/null || true") == ""
    again = play(lab.inventory, variables={"nccl_network_state": "absent"})
    assert again.rc == 0 and again.changed() == {"node1": 0, "node2": 0}
