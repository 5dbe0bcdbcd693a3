"""ncclkit's rules on each backend, and the plan that gets there from what a host has."""

import json

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.network.firewall import backends, rules
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.firewall.observe import iptables_layout_tables
from conftest import REPO_ROOT

SAMPLES = REPO_ROOT / "tests" / "unit" / "plugins" / "module_utils" / "network" / "firewall_samples"
SOURCES = ["198.19.20.11", "198.19.20.12"]
STATE_DIR = "/etc/ncclkit"
NOTHING = {"nft": {"nftables": []}, "nft_managed": [], "iptables_save": "", "ufw": None, "firewalld": None}


def spec(**changes):
    args = dict(ifname="eth1", sources=SOURCES, port_range=(32768, 60999), ports=[29500])
    args.update(changes)
    return rules.make_spec(**args)


def runs(planned):
    return [action["run"] for action in planned["actions"] if "run" in action]


def written(planned):
    return {action["write"].rsplit("/", 1)[1]: action["content"] for action in planned["actions"] if "write" in action}


def test_spec_collapses_sources_and_merges_ports():
    made = spec(sources=["10.0.0.0/24", "10.0.0.7", "10.0.1.0/24"], ports=[29500, 40000])
    assert made["sources"] == ["10.0.0.0/23"]
    assert made["spans"] == [(29500, 29500), (32768, 60999)]
    with pytest.raises(rules.RuleError, match="nccl_network_sources"):
        spec(sources=["10.0.0.300"])
    with pytest.raises(rules.RuleError, match="IPv4"):
        spec(sources=[])
    with pytest.raises(rules.RuleError, match="interface name"):
        spec(ifname='eth1"; flush ruleset')


def test_nftables_ruleset_replaces_only_ncclkits_table():
    text = rules.nft_ruleset(spec())
    assert "flush ruleset" not in text
    assert text.splitlines()[1:3] == ["table inet ncclkit", "delete table inet ncclkit"]
    assert "elements = { 198.19.20.11, 198.19.20.12 }" in text
    assert 'iifname "eth1" ip saddr @cluster tcp dport { 29500, 32768-60999 } accept' in text
    assert 'iifname "eth1" tcp dport { 29500, 32768-60999 } ct state new drop' in text
    assert "ct state new drop" not in rules.nft_ruleset(spec(drop_others=False))
    assert "icmp" not in rules.nft_ruleset(spec(icmp=False))


def test_nftables_user_chains_get_a_chain_and_a_guarded_jump():
    text = rules.nft_ruleset(spec(), ["inet filter input"])
    assert "flush chain inet filter ncclkit" in text
    assert ("add rule inet filter ncclkit iifname \"eth1\" ip saddr { 198.19.20.11, 198.19.20.12 } "
            "tcp dport { 29500, 32768-60999 } accept") in text
    script = rules.nft_script(["inet filter input"], "/etc/ncclkit/firewall.nft")
    assert script[1] == ("nft list chain inet filter input | grep -qw 'jump ncclkit' || "
                         "nft insert rule inet filter input jump ncclkit")
    with pytest.raises(rules.RuleError, match="FAMILY TABLE CHAIN"):
        rules.parse_chain("bridge filter input")


def test_iptables_and_ufw_split_ports_past_fifteen():
    many = spec(ports=list(range(20000, 20020, 2)) + [21000, 22000, 23000, 24000, 25000])
    lines = [line for line in rules.iptables_rules(many).splitlines() if "-s 198.19.20.11/32" in line and "tcp" in line]
    assert len(lines) == 2
    assert all(sum(2 if ":" in p else 1 for p in line.split("--dports ")[1].split()[0].split(",")) <= 15
               for line in lines)
    ufw = rules.ufw_rules(spec())
    assert ufw == ["allow in on eth1 from 198.19.20.11 to any port 29500,32768:60999 proto tcp comment 'ncclkit'",
                   "allow in on eth1 from 198.19.20.12 to any port 29500,32768:60999 proto tcp comment 'ncclkit'",
                   "deny in on eth1 to any port 29500,32768:60999 proto tcp comment 'ncclkit'"]


def test_firewalld_rich_rules_per_source_and_span():
    assert rules.firewalld_rules(spec(sources=["10.0.0.0/16"])) == [
        'rule family="ipv4" source address="10.0.0.0/16" port port="29500" protocol="tcp" accept',
        'rule family="ipv4" source address="10.0.0.0/16" port port="32768-60999" protocol="tcp" accept',
        'rule family="ipv4" source address="10.0.0.0/16" icmp-type name="echo-request" accept']


def test_auto_picks_the_active_firewall_else_nftables():
    installed = {"nftables": True, "iptables": True}
    assert backends.choose_backend("auto", NOTHING, installed) == ("nftables", [])
    assert backends.choose_backend("auto", NOTHING, {"iptables": True})[0] == "iptables"
    backend, warnings = backends.choose_backend("auto", NOTHING, {})
    assert backend == "none" and "no firewall tool" in warnings[0]
    both = dict(NOTHING, ufw="active", firewalld="running")
    backend, warnings = backends.choose_backend("auto", both, installed)
    assert backend == "firewalld" and "several firewalls are active (firewalld, ufw)" in warnings[0]
    assert backends.choose_backend("iptables", both, installed) == ("iptables", [])


def test_a_fresh_host_gets_files_then_the_script():
    planned = backends.plan("present", "nftables", spec(), NOTHING, {}, STATE_DIR)
    assert list(written(planned)) == ["firewall.nft", "firewall.sh", "firewall.json"]
    assert runs(planned) == [["sh", "/etc/ncclkit/firewall.sh"]]
    assert [list(action)[0] for action in planned["actions"]] == ["write"] * 2 + ["run", "write"]
    assert planned["before"] == [] and "table inet ncclkit {" in planned["after"]
    record = json.loads(written(planned)["firewall.json"])
    assert record == {"firewalld": None}  # only what a later run reads


def applied(backend, made, seen=None, **kwargs):
    """What a host holds after the plan ran: its files, and the live state as observed."""
    planned = backends.plan("present", backend, made, NOTHING if seen is None else seen, {}, STATE_DIR, **kwargs)
    return dict(written(planned))


def test_a_second_run_changes_nothing():
    made = spec()
    stored = applied("nftables", made)
    seen = dict(NOTHING, nft={"nftables": [{"table": {"family": "inet", "name": "ncclkit"}}]},
                nft_own_text=f'table inet ncclkit {{\n\tcomment "ncclkit {rules.fingerprint(made)}"\n}}')
    assert backends.plan("present", "nftables", made, seen, stored, STATE_DIR)["actions"] == []
    # A new host changes the fingerprint: the rules are reloaded.
    again = backends.plan("present", "nftables", spec(sources=SOURCES + ["198.19.20.13"]), seen, stored, STATE_DIR)
    assert runs(again) == [["sh", "/etc/ncclkit/firewall.sh"]]


def test_a_default_drop_chain_stops_the_plan_before_any_change():
    ruleset = json.loads((SAMPLES / "nft-user-policy-drop.json").read_text())
    seen = dict(NOTHING, nft=ruleset, nft_managed=sorted(map(list, iptables_layout_tables(ruleset))))
    with pytest.raises(backends.PlanError) as error:
        backends.plan("present", "nftables", spec(), seen, {}, STATE_DIR)
    assert "inet filter input drops what it does not accept" in str(error.value)
    assert "nccl_network_nftables_chains" in str(error.value) and "Nothing was changed" in str(error.value)
    with pytest.raises(backends.PlanError, match="nccl_network_firewall: nftables"):
        backends.plan("present", "iptables", spec(), seen, {}, STATE_DIR)
    planned = backends.plan("present", "nftables", spec(), seen, {}, STATE_DIR, user_chains=["inet filter input"])
    assert "jump ncclkit" in written(planned)["firewall.sh"]


def test_absent_removes_ncclkits_table_chain_and_jump_only():
    ruleset = json.loads((SAMPLES / "nft-user-policy-drop.json").read_text())
    seen = dict(NOTHING, nft=ruleset, nft_managed=sorted(map(list, iptables_layout_tables(ruleset))))
    stored = {"firewall.nft": "x", "firewall.sh": "y", "firewall.json": '{"backend": "nftables"}'}
    planned = backends.plan("absent", "auto", None, seen, stored, STATE_DIR)
    commands = [" ".join(argv) for argv in runs(planned)]
    assert commands[0] == "nft delete table inet ncclkit"
    assert commands[1].startswith("nft delete rule inet filter input handle ")
    assert commands[2] == "nft delete chain inet filter ncclkit"
    assert len(commands) == 3
    assert sorted(action["remove"] for action in planned["actions"] if "remove" in action) == [
        "/etc/ncclkit/firewall.json", "/etc/ncclkit/firewall.nft", "/etc/ncclkit/firewall.sh"]
    assert planned["backend"] == "none"


def test_switching_to_nftables_removes_the_iptables_chain():
    save = ("*filter\n:INPUT ACCEPT [0:0]\n:NCCLKIT - [0:0]\n-A INPUT -j NCCLKIT\n"
            '-A NCCLKIT -m comment --comment "ncclkit 0123"\nCOMMIT\n')
    planned = backends.plan("present", "nftables", spec(), dict(NOTHING, iptables_save=save),
                            {"firewall.iptables": "old"}, STATE_DIR)
    assert runs(planned)[1:] == [["iptables", "-w", "-D", "INPUT", "-j", "NCCLKIT"],
                                 ["iptables", "-w", "-F", "NCCLKIT"], ["iptables", "-w", "-X", "NCCLKIT"]]
    assert {"remove": "/etc/ncclkit/firewall.iptables"} in planned["actions"]
    assert "-A INPUT -j NCCLKIT" in planned["before"]


def test_ufw_rules_are_re_added_in_order_when_they_change():
    added = (SAMPLES / "ufw-active.show-added").read_text()
    seen = dict(NOTHING, ufw="active", ufw_added=added)
    assert runs(backends.plan("present", "ufw", spec(), seen, {}, STATE_DIR)) == []
    grown = backends.plan("present", "ufw", spec(sources=SOURCES + ["198.19.20.14"]), seen, {}, STATE_DIR)
    verbs = [argv[1] for argv in runs(grown)]
    assert verbs == ["delete"] * 3 + ["allow"] * 3 + ["deny"]
    assert runs(grown)[0][:3] == ["ufw", "delete", "allow"]
    # The user's own rules (the deny of 46883, SSH) are never in the plan.
    assert not any("46883" in " ".join(argv) or "22/tcp" in argv for argv in runs(grown))
    inactive = backends.plan("present", "ufw", spec(), dict(seen, ufw="inactive"), {}, STATE_DIR)
    assert "ufw is not active" in inactive["warnings"][0]


def test_firewalld_adds_what_is_missing_and_removes_what_it_recorded():
    made = spec(sources=["198.19.20.11"])
    old = 'rule family="ipv4" source address="198.19.20.99" port port="32768-60999" protocol="tcp" accept'
    stored = {"firewall.json": json.dumps({"firewalld": {"zone": "public", "rules": [old]}})}
    seen = dict(NOTHING, firewalld="running", firewalld_runtime=[old], firewalld_permanent=[old])
    planned = backends.plan("present", "firewalld", made, seen, stored, STATE_DIR, zone="public")
    commands = runs(planned)
    assert commands[0] == ["firewall-cmd", "--zone=public", f"--remove-rich-rule={old}"]
    assert commands[1] == ["firewall-cmd", "--permanent", "--zone=public", f"--remove-rich-rule={old}"]
    assert len(commands) == 2 + 2 * len(rules.firewalld_rules(made))
    assert json.loads(written(planned)["firewall.json"])["firewalld"]["rules"] == rules.firewalld_rules(made)


OLD_RICH_RULE = 'rule family="ipv4" source address="198.19.20.99" port port="32768-60999" protocol="tcp" accept'
FIREWALLD_RECORD = {"firewall.json": json.dumps({"firewalld": {"zone": "public", "rules": [OLD_RICH_RULE]}})}


@pytest.mark.parametrize("state, backend", [("absent", "none"), ("present", "nftables")])
@pytest.mark.parametrize("firewalld", ["not running", None])
def test_recorded_firewalld_rules_are_never_forgotten_while_firewalld_is_down(state, backend, firewalld):
    seen = dict(NOTHING, firewalld=firewalld)
    with pytest.raises(backends.PlanError) as raised:
        backends.plan(state, backend, spec() if state == "present" else None, seen, FIREWALLD_RECORD, STATE_DIR,
                      zone="public")
    message = str(raised.value)
    assert "firewalld is not running" in message and "start firewalld" in message
    assert f"firewall-offline-cmd --zone=public --remove-rich-rule='{OLD_RICH_RULE}'" in message


def test_the_record_is_written_after_the_commands_and_the_script_before():
    seen = dict(NOTHING, firewalld="running", firewalld_runtime=[OLD_RICH_RULE], firewalld_permanent=[OLD_RICH_RULE])
    planned = backends.plan("present", "firewalld", spec(), seen, FIREWALLD_RECORD, STATE_DIR, zone="public")
    kinds = [("record" if action.get("write", "").endswith("firewall.json") else "write") if "write" in action
             else "run" if "run" in action else "remove" for action in planned["actions"]]
    assert kinds[0] == "write" and kinds[-1] == "record" and set(kinds[1:-1]) == {"run"}
    nft = backends.plan("present", "nftables", spec(), NOTHING, {}, STATE_DIR)
    order = [action.get("write", "run").rsplit("/", 1)[-1] for action in nft["actions"]]
    assert order.index("firewall.sh") < order.index("run") < order.index("firewall.json")


def test_absent_removes_the_record_after_the_commands():
    seen = dict(NOTHING, firewalld="running", firewalld_runtime=[OLD_RICH_RULE], firewalld_permanent=[OLD_RICH_RULE])
    planned = backends.plan("absent", "none", None, seen, FIREWALLD_RECORD, STATE_DIR, zone="public")
    assert "run" in planned["actions"][0] and planned["actions"][-1] == {"remove": f"{STATE_DIR}/firewall.json"}
