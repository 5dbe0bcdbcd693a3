"""Bad input to the firewall as a careless user or an attacker would give it: a typo'd prefix that
would open NCCL's ports to everyone, IPv6 peers, and names that would run as root at boot."""

import json
import subprocess

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.network.firewall import backends, rules
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.firewall import sources as firewall_sources

NOTHING = {"nft": {"nftables": []}, "nft_managed": [], "iptables_save": "", "ufw": None, "firewalld": None}


def spec(**changes):
    args = dict(ifname="eth1", sources=["198.19.20.11", "198.19.20.12"], port_range=(32768, 60999), ports=[29500])
    args.update(changes)
    return rules.make_spec(**args)


@pytest.mark.parametrize("source, network", [("10.0.0.0/0", "0.0.0.0/0"), ("10.1.2.3/8", "10.0.0.0/8"),
                                             ("192.168.1.7/24", "192.168.1.0/24")])
def test_a_source_with_host_bits_is_refused_naming_its_network(source, network):
    with pytest.raises(rules.RuleError) as error:
        spec(sources=["198.19.20.11", source])
    message = str(error.value)
    assert f"{source!r} has host bits set" in message and network in message
    assert "nccl_network_sources" in message and "\n" not in message


@pytest.mark.parametrize("source", ["0.0.0.0/0", "10.0.0.0/7", "128.0.0.0/1"])
def test_a_prefix_wider_than_8_needs_the_explicit_switch(source):
    with pytest.raises(rules.RuleError, match="nccl_network_allow_wide_sources: true"):
        spec(sources=[source])
    assert spec(sources=[source], allow_wide=True)["sources"] == [source]


def test_usual_sources_stay_accepted():
    made = spec(sources=["10.0.0.0/8", "172.16.0.0/12", "198.19.20.11", "198.19.20.12/32"])
    assert made["sources"] == ["10.0.0.0/8", "172.16.0.0/12", "198.19.20.11/32", "198.19.20.12/32"]


@pytest.mark.parametrize("source", ["fd00::11", "fd00::/64", "::ffff:10.0.0.1"])
def test_ipv6_sources_are_refused_with_what_to_do(source):
    with pytest.raises(rules.RuleError) as error:
        spec(sources=["198.19.20.11", source])
    message = str(error.value)
    assert "IPv6" in message and source in message and "nccl_network_firewall: none" in message


def test_the_role_checks_sources_before_anything_changes():
    """The preflight's list of problems: every bad entry at once, nothing raised."""
    problems = firewall_sources.problems(["10.0.0.0/0", "fd00::1", "10.0.0.0/8", "bad"], False)
    assert len(problems) == 3 and "10.0.0.0/0" in problems[0] and "fd00::1" in problems[1]
    assert firewall_sources.problems(["10.0.0.0/8"], False) == []
    assert firewall_sources.problems(["0.0.0.0/0"], True) == []


@pytest.mark.parametrize("ifname", ["eth1$(reboot)", "eth1`id`", "eth1\nreboot", "eth1|sh", "eth1&",
                                    "a234567890123456", "-eth1", "eth/1", "eth:1", "", "."])
def test_interface_names_follow_the_kernels_rules(ifname):
    with pytest.raises(rules.RuleError, match="interface name"):
        spec(ifname=ifname)


@pytest.mark.parametrize("chain", ["inet filter input;reboot", "inet filter $(reboot)", "inet fil`id`ter input",
                                   "inet filter input\nreboot x", "inet 'filter' input", "inet -filter input"])
def test_nftables_chain_names_follow_nftables_identifier_rules(chain):
    with pytest.raises(rules.RuleError) as error:
        rules.parse_chain(chain)
    assert "nccl_network_nftables_chains" in str(error.value) and repr(chain) in str(error.value)


def test_the_boot_script_quotes_what_it_interpolates(tmp_path):
    state_dir = tmp_path / "state dir; touch pwned"
    made = spec()
    planned = backends.plan("present", "nftables", made, NOTHING, {}, str(state_dir),
                            user_chains=["inet filter input"])
    script = next(a["content"] for a in planned["actions"] if a.get("write", "").endswith("firewall.sh"))
    assert f"nft -f '{state_dir}/firewall.nft'" in script
    # The shell reads it as the commands we meant: with nft and grep stood in by `echo`.
    traced = subprocess.run(["sh", "-n", "-c", script], capture_output=True, text=True, check=False)
    assert traced.returncode == 0, traced.stderr
    fake = tmp_path / "bin"
    fake.mkdir()
    for tool in ("nft", "iptables", "iptables-restore"):
        (fake / tool).write_text('#!/bin/sh\nprintf "%s|" "$@" >>"$LOG"; echo >>"$LOG"\n')
        (fake / tool).chmod(0o755)
    log = tmp_path / "log"
    subprocess.run(["sh", "-c", script], cwd=tmp_path, env={"PATH": f"{fake}:/usr/bin:/bin", "LOG": str(log)},
                   check=False)
    assert not (tmp_path / "pwned").exists()
    assert log.read_text().splitlines()[0] == f"-f|{state_dir}/firewall.nft|"
    iptables = rules.iptables_script(f"{state_dir}/firewall.iptables")
    assert iptables[0] == f"iptables-restore -w --noflush '{state_dir}/firewall.iptables'"


def test_the_module_refuses_a_wide_source_and_changes_nothing(monkeypatch, capsys, tmp_path):
    from ansible.module_utils.testing import patch_module_args

    from ansible_collections.ncclkit.cluster.plugins.modules import nccl_firewall
    ran = []
    monkeypatch.setattr(nccl_firewall, "run_command", lambda argv, *dummy, **__: ran.append(argv) or (0, "", ""))
    args = {"ifname": "eth1", "sources": ["10.0.0.0/0"], "state_dir": str(tmp_path / "ncclkit")}
    with patch_module_args(args), pytest.raises(SystemExit):
        nccl_firewall.main()
    result = json.loads(capsys.readouterr().out)
    assert result["failed"] and "'10.0.0.0/0' has host bits set" in result["msg"]
    assert ran == [] and list(tmp_path.iterdir()) == []
    with patch_module_args({**args, "sources": ["0.0.0.0/0"], "allow_wide_sources": True,
                            "_ansible_check_mode": True}), pytest.raises(SystemExit):
        nccl_firewall.main()
    assert not json.loads(capsys.readouterr().out).get("failed")
