"""The nccl_firewall module through main(), with the host's commands played by a fake."""

import json

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args

from ansible_collections.ncclkit.cluster.plugins.module_utils.host.command import CommandTimeout, run_command
from ansible_collections.ncclkit.cluster.plugins.modules import nccl_firewall
from conftest import REPO_ROOT

SAMPLES = REPO_ROOT / "tests" / "unit" / "plugins" / "module_utils" / "network" / "firewall_samples"
ARGS = {"ifname": "eth1", "sources": ["198.19.20.11", "198.19.20.12"], "ports": [29500]}


class FakeHost:
    """Answers the commands the module runs; records the ones that change something."""

    def __init__(self, ruleset=None, tools=("sh", "nft", "iptables"), fail=()):
        self.ruleset = ruleset or {"nftables": [{"metainfo": {"version": "1.0.6"}}]}
        self.tools = set(tools)
        self.fail = fail
        self.changes = []

    def which(self, name):
        return f"/usr/sbin/{name}" if name in self.tools else None

    def run_command(self, argv, timeout, data=None, raise_timeout=False):
        assert timeout > 0
        if argv[0] not in self.tools:
            return 127, "", f"{argv[0]}: command not found"
        line = " ".join(argv)
        if "hang" in self.fail and argv[0] == "firewall-cmd" and raise_timeout:
            raise CommandTimeout(f"`{line}` did not finish within {timeout} s")
        if line == "nft -j list ruleset":
            return 0, json.dumps(self.ruleset), ""
        if argv[:2] == ["nft", "list"] or argv[:2] == ["iptables-save", "-t"]:
            return (1, "", "No such file or directory") if "inet ncclkit" in line else (0, "", "")
        if argv[:2] == ["nft", "-c"]:
            return (1, "", "Error: syntax error") if "check" in self.fail else (0, "", "")
        self.changes.append(line)
        return (1, "", "boom") if any(word in line for word in self.fail) else (0, "", "")


@pytest.fixture
def host(monkeypatch):
    fake = FakeHost()
    monkeypatch.setattr(nccl_firewall.shutil, "which", fake.which)
    monkeypatch.setattr(nccl_firewall, "run_command", fake.run_command)
    monkeypatch.setattr(AnsibleModule, "run_command", lambda *_, **__: pytest.fail("use host_command.run_command"))
    return fake


def run(capsys, tmp_path, **args):
    with patch_module_args(dict(ARGS, state_dir=str(tmp_path), **args)), pytest.raises(SystemExit) as exit_info:
        nccl_firewall.main()
    return exit_info.value.code, json.loads(capsys.readouterr().out)


def test_check_mode_shows_the_diff_and_writes_nothing(host, capsys, tmp_path):
    code, result = run(capsys, tmp_path, _ansible_check_mode=True, _ansible_diff=True)
    assert code == 0 and result["changed"] and result["backend"] == "nftables"
    assert "table inet ncclkit {" in result["diff"]["after"] and result["diff"]["before"] == "\n"
    assert list(tmp_path.iterdir()) == [] and host.changes == []
    assert result["actions"][-2:] == [f"sh {tmp_path}/firewall.sh", f"write {tmp_path}/firewall.json"]


def test_apply_writes_the_files_and_runs_the_script(host, capsys, tmp_path):
    code, result = run(capsys, tmp_path)
    assert code == 0 and result["changed"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["firewall.json", "firewall.nft", "firewall.sh"]
    assert host.changes == [f"sh {tmp_path}/firewall.sh"]
    assert f"nft -f {tmp_path}/firewall.nft" in (tmp_path / "firewall.sh").read_text()
    assert oct((tmp_path / "firewall.nft").stat().st_mode & 0o777) == "0o644"


def test_a_failing_load_puts_the_files_back(host, capsys, tmp_path):
    (tmp_path / "firewall.sh").write_text("old script\n")
    host.fail = ("firewall.sh",)
    code, result = run(capsys, tmp_path)
    assert code == 1 and "failed (load ncclkit's nftables rules): boom" in result["msg"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["firewall.sh"]
    assert (tmp_path / "firewall.sh").read_text() == "old script\n"


def test_rules_nft_rejects_change_nothing(host, capsys, tmp_path):
    host.fail = ("check",)
    code, result = run(capsys, tmp_path)
    assert code == 1 and "nft rejects the rules" in result["msg"] and host.changes == []
    assert list(tmp_path.iterdir()) == []


def test_a_default_drop_chain_fails_before_any_change(host, capsys, tmp_path):
    host.ruleset = json.loads((SAMPLES / "nft-user-policy-drop.json").read_text())
    code, result = run(capsys, tmp_path)
    assert code == 1 and "inet filter input drops what it does not accept" in result["msg"]
    assert host.changes == [] and list(tmp_path.iterdir()) == []


def test_a_missing_tool_and_a_stopped_firewalld_are_refused(host, capsys, tmp_path):
    code, result = run(capsys, tmp_path, backend="ufw")
    assert code == 1 and "ufw is not installed" in result["msg"]
    host.tools.add("firewall-cmd")
    code, result = run(capsys, tmp_path, backend="firewalld")
    assert code == 1 and "firewalld is not running" in result["msg"] and "never starts" in result["msg"]


def test_bad_input_names_the_cause(host, capsys, tmp_path):
    code, result = run(capsys, tmp_path, sources=["not-an-address"])
    assert code == 1 and "not-an-address" in result["msg"]
    code, result = run(capsys, tmp_path, port_range=[80, 90])
    assert code == 1 and "nccl_network_port_range is 80-90" in result["msg"]
    code, result = run(capsys, tmp_path, nftables_chains=["filter input"])
    assert code == 1 and "FAMILY TABLE CHAIN" in result["msg"]


def test_absent_on_a_clean_host_changes_nothing(host, capsys, tmp_path):
    code, result = run(capsys, tmp_path, state="absent")
    assert code == 0 and not result["changed"] and result["backend"] == "none" and host.changes == []


def test_absent_removes_its_files_and_an_emptied_state_dir(host, capsys, tmp_path):
    state_dir = tmp_path / "ncclkit"
    code, result = run(capsys, state_dir)
    assert code == 0 and len(list(state_dir.iterdir())) == 3
    code, result = run(capsys, state_dir, state="absent")
    assert code == 0 and result["changed"] and not state_dir.exists()
    assert result["actions"][-1] == f"remove the empty {state_dir}"
    # Someone else's file keeps the directory.
    run(capsys, state_dir)
    (state_dir / "nccl.env").write_text("NCCL_SOCKET_IFNAME=eth1\n")
    run(capsys, state_dir, state="absent")
    assert [p.name for p in state_dir.iterdir()] == ["nccl.env"]


def test_a_hung_firewall_tool_fails_naming_the_command(host, capsys, tmp_path):
    host.tools.add("firewall-cmd")
    host.fail = ("hang",)
    code, result = run(capsys, tmp_path)
    assert code == 1 and "`firewall-cmd --state` did not finish within 10 s" in result["msg"]
    assert "systemctl status firewalld dbus" in result["msg"] and host.changes == []


def test_the_shared_runner_stops_a_hung_command_and_knows_a_missing_one():
    assert run_command(["sleep", "5"], 0.2)[0] == 124
    with pytest.raises(CommandTimeout, match="`sleep 5` did not finish within 0.2 s"):
        run_command(["sleep", "5"], 0.2, raise_timeout=True)
    assert run_command(["ncclkit-no-such-tool"], 1) == (127, "", "ncclkit-no-such-tool: command not found")
    assert run_command(["cat"], 5, data="rules\n") == (0, "rules\n", "")
