"""Every firewall backend that runs in a lab node, at once: a 4-node lab (index 21) whose nodes
each run their own firewall with a default drop (node1 iptables, node2 ufw, node3 nftables,
node4 firewalld with its own D-Bus).
`auto` finds each; the cluster gets NCCL's ports, the outsider does not, the user's rules stay,
a second run changes nothing, and `absent` takes back only ncclkit's rules."""

from __future__ import annotations

from contextlib import ExitStack

import pytest
from lab_helpers import needs_root
from lab_indices import lab_index
from network_helpers import Listeners, facts, lab_with_outsider, play, reachable, sh

pytestmark = [pytest.mark.lab, needs_root]

INDEX = lab_index(__file__)
NCCL_PORTS = [32768, 60999, 29500]
BACKENDS = {"node1": "iptables", "node2": "ufw", "node3": "nftables", "node4": "firewalld"}
# Each user's own firewall: default drop, SSH and 8080 admitted.
SETUPS = {
    "iptables": ("iptables -A INPUT -i lo -j ACCEPT && "
                 "iptables -A INPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT && "
                 "iptables -A INPUT -p tcp --dport 22 -j ACCEPT && "
                 "iptables -A INPUT -p tcp --dport 8080 -j ACCEPT && iptables -P INPUT DROP"),
    "ufw": "ufw allow 22/tcp && ufw allow 8080/tcp && ufw --force enable",
    "nftables": ("nft 'table inet filter { chain input { type filter hook input priority 0; policy drop; "
                 "ct state established,related accept; iif lo accept; tcp dport { 22, 8080 } accept; }; }'"),
    # A node shares the host's /run: D-Bus and firewalld get private ones in the node's mounts.
    "firewalld": ("mkdir -p /run/dbus /run/firewalld && mount -t tmpfs tmpfs /run/dbus && "
                  "mount -t tmpfs tmpfs /run/firewalld && dbus-daemon --system --fork && "
                  "(firewalld --nofork >/dev/null 2>&1 &) && "
                  "for i in $(seq 100); do firewall-cmd --state >/dev/null 2>&1 && break; sleep 0.1; done && "
                  "firewall-cmd --add-port=8080/tcp && firewall-cmd --permanent --add-port=8080/tcp"),
}
# How to read each user's rules back, and how many lines of ncclkit's are there.
USER_RULES = {"iptables": ("iptables -S INPUT", "--dport 8080 -j ACCEPT"),
              "ufw": ("ufw show added", "ufw allow 8080/tcp"),
              "nftables": ("nft list table inet filter", "tcp dport { 22, 8080 } accept"),
              "firewalld": ("firewall-cmd --list-ports --permanent", "8080/tcp")}
OURS = {"iptables": "iptables -S | grep -c NCCLKIT || true",
        "ufw": "ufw show added | grep -c \"comment 'ncclkit'\" || true",
        "nftables": "nft list ruleset | grep -c ncclkit || true",
        # Runtime and permanent: `absent` must leave neither behind.
        "firewalld": "(firewall-cmd --list-rich-rules; firewall-cmd --permanent --list-rich-rules) "
                     "| grep -c 198.19 || true"}
CHAINS = {"nccl_network_nftables_chains": ["inet filter input"]}
# The firewall step alone (with the cluster NIC it needs): the rest is tested in test_network_lab.
FIREWALL_ONLY = ("--tags", "nccl_preflight,nccl_network_firewall")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    folder = tmp_path_factory.mktemp(f"lab{INDEX}")
    setups = {node: SETUPS[backend] for node, backend in BACKENDS.items()}
    # ExitStack, not `with` on the generator-based context manager: pylint's cleanup check.
    with ExitStack() as stack:
        yield stack.enter_context(lab_with_outsider(INDEX, len(BACKENDS), folder, setups))


def private_ip(node):
    return f"198.19.{INDEX}.{10 + int(node[-1])}"


def ours(lab):
    return {node: int(sh(lab, node, OURS[backend]).strip()) for node, backend in BACKENDS.items()}


def users_rules_kept(lab):
    return all(USER_RULES[backend][1] in sh(lab, node, USER_RULES[backend][0]) for node, backend in BACKENDS.items())


def test_a_default_drop_nftables_chain_is_refused_before_any_change(lab):
    result = play(lab.inventory, *FIREWALL_ONLY)
    assert result.rc != 0
    outcome = result.task("Add ncclkit's rules to the firewall (or remove them)")
    assert outcome["node3"].get("failed")
    assert "inet filter input drops what it does not accept" in outcome["node3"]["msg"]
    assert "nccl_network_nftables_chains" in outcome["node3"]["msg"]
    assert [outcome[node]["backend"] for node in ("node1", "node2", "node4")] == ["iptables", "ufw", "firewalld"]
    assert ours(lab)["node3"] == 0


def test_each_backend_admits_the_cluster_only(lab):
    result = play(lab.inventory, variables=CHAINS)
    assert result.rc == 0, result.stdout[-3000:]
    assert {node: facts(result, node)["firewall"] for node in BACKENDS} == BACKENDS
    # Ring neighbours and the first host: 2 + 2 + 3 + 2 probed pairs.
    assert facts(result, "node1")["passed"] and len(facts(result, "node1")["reachability"]) == 9
    listeners = Listeners(lab, BACKENDS, NCCL_PORTS + [8080])
    try:
        for node in BACKENDS:
            for peer in BACKENDS:
                if peer != node:
                    assert reachable(lab, node, private_ip(peer), NCCL_PORTS) == dict.fromkeys(NCCL_PORTS, True)
            from_outside = reachable(lab, "outsider", private_ip(node), NCCL_PORTS + [8080, 22])
            assert from_outside == {**dict.fromkeys(NCCL_PORTS, False), 8080: True, 22: True}, node
    finally:
        listeners.close()
    assert users_rules_kept(lab) and all(ours(lab).values())


def test_a_second_run_changes_nothing(lab):
    again = play(lab.inventory, *FIREWALL_ONLY, variables=CHAINS)
    assert again.rc == 0 and again.changed() == dict.fromkeys(BACKENDS, 0)


def test_absent_takes_back_only_ncclkits_rules(lab):
    gone = play(lab.inventory, *FIREWALL_ONLY, variables={"nccl_network_state": "absent"})
    assert gone.rc == 0 and all(gone.changed().values())
    assert ours(lab) == dict.fromkeys(BACKENDS, 0)
    assert users_rules_kept(lab)
