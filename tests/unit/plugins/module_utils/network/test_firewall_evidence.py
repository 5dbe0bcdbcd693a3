"""Which of a host's own rules drop a connection: walked over rulesets captured on lab nodes."""

import json

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.network.firewall.evidence import (
    describe,
    drops,
    ruleset_model,
)
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.firewall.observe import (
    active_firewalls,
    default_drop_chains,
    iptables_in_use,
    iptables_layout_tables,
    native_tables,
)
from conftest import REPO_ROOT

SAMPLES = REPO_ROOT / "tests" / "unit" / "plugins" / "module_utils" / "network" / "firewall_samples"
PEER, OUTSIDER, ME = "198.19.20.11", "198.19.20.250", "198.19.20.12"


def load(name):
    return (SAMPLES / name).read_text()


def seen_for(nft=None, iptables=None, ufw=None):
    ruleset = json.loads(load(nft)) if nft else None
    return {"nft": ruleset, "nft_managed": sorted(map(list, iptables_layout_tables(ruleset))),
            "iptables_save": load(iptables) if iptables else None, "ufw": ufw, "firewalld": None}


def suspects(seen, source, port):
    model = ruleset_model(seen["nft"], seen["nft_managed"], seen["iptables_save"])
    return [describe(item) for item in drops(model, source, port, "eth1", ME)]


@pytest.fixture(scope="module")
def user_nft():
    return seen_for(nft="nft-user-policy-drop.json")


def test_a_drop_after_ncclkits_jump_does_not_touch_the_cluster(user_nft):
    assert suspects(user_nft, PEER, 46883) == []


def test_the_outsider_meets_ncclkits_drop_and_the_users(user_nft):
    assert suspects(user_nft, OUTSIDER, 46883) == [
        "ncclkit: table inet ncclkit chain input: iifname eth1 tcp dport { 29500, 32768-60999 } ct state new drop",
        "nftables: table inet filter chain input: tcp dport 46883 drop"]


def test_policies_and_ssh(user_nft):
    assert suspects(user_nft, OUTSIDER, 22) == []
    assert suspects(user_nft, PEER, 8080) == ["nftables: table inet filter chain input: policy drop"]


def test_the_layout_of_iptables_tables_is_recognised(user_nft):
    # ufw's disabled leftovers: iptables-nft tables, which nft does not always mark.
    assert iptables_layout_tables(user_nft["nft"]) == {("ip", "filter"), ("ip6", "filter")}
    assert native_tables(user_nft) == [("inet", "filter")]
    assert default_drop_chains(user_nft) == ["inet filter input"]


def test_ufw_rules_are_read_from_iptables_and_named_ufw():
    seen = seen_for(nft="ufw-active.nft.json", iptables="ufw-active.iptables-save", ufw="active")
    assert suspects(seen, PEER, 46883) == [
        "ufw: iptables filter ufw-user-input: -A ufw-user-input -i eth1 -p tcp -m tcp --dport 46883 -j DROP"]
    assert suspects(seen, PEER, 32768) == []
    assert suspects(seen, OUTSIDER, 8080) == ["ufw: iptables filter INPUT: policy drop"]
    assert suspects(seen, OUTSIDER, 22) == []
    assert active_firewalls(seen) == ["ufw"]
    assert native_tables(seen) == [] and default_drop_chains(seen) == []


def test_iptables_rejects_and_unreadable_matches_count_as_suspects():
    seen = seen_for(iptables="iptables-user-reject.iptables-save")
    assert suspects(seen, PEER, 32768) == [
        "iptables: iptables filter INPUT: -A INPUT -p tcp -m tcp --dport 32768 -j REJECT --reject-with tcp-reset"]
    assert suspects(seen, PEER, 46883) == []
    assert "-m limit --limit 5/min -j DROP" in suspects(seen, PEER, 9999)[0]
    assert suspects(seen, OUTSIDER, 40000)[0].startswith("ncclkit: iptables filter NCCLKIT:")
    assert active_firewalls(seen) == ["iptables"]


def test_ncclkits_own_jump_alone_is_not_an_iptables_firewall():
    save = "*filter\n:INPUT ACCEPT [0:0]\n:NCCLKIT - [0:0]\n-A INPUT -j NCCLKIT\nCOMMIT\n"
    assert not iptables_in_use(save)
    assert iptables_in_use(save.replace(":INPUT ACCEPT", ":INPUT DROP"))
    assert iptables_in_use(save + "*filter\n-A INPUT -p tcp --dport 80 -j ACCEPT\n")


def test_a_final_drop_all_rule_is_a_default_drop():
    ruleset = {"nftables": [
        {"table": {"family": "inet", "name": "fw"}},
        {"chain": {"family": "inet", "table": "fw", "name": "in", "hook": "input", "prio": 0, "policy": "accept"}},
        {"rule": {"family": "inet", "table": "fw", "chain": "in",
                  "expr": [{"match": {"op": "==", "left": {"payload": {"protocol": "tcp", "field": "dport"}},
                                      "right": 22}}, {"accept": None}]}},
        {"rule": {"family": "inet", "table": "fw", "chain": "in", "expr": [{"counter": None}, {"drop": None}]}},
    ]}
    seen = {"nft": ruleset, "nft_managed": []}
    assert default_drop_chains(seen) == ["inet fw in"]
    model = ruleset_model(ruleset)
    assert [item["kind"] for item in drops(model, PEER, 40000, "eth1")] == ["any"]
    assert drops(model, PEER, 22, "eth1") == []
