"""nccl_mtu's host commands run with a time limit: a hung nmcli (NetworkManager stuck on D-Bus)
fails the module with a message naming the command and the limit instead of holding the play."""

from __future__ import annotations

import sys

import pytest

from ansible_collections.ncclkit.cluster.plugins.modules import nccl_mtu


class Failed(Exception):
    pass


class Module:
    """Records fail_json as AnsibleModule would end the run."""

    def fail_json(self, **result):
        raise Failed(result)


def test_a_hung_command_fails_naming_it_and_the_limit(tmp_path):
    nmcli = tmp_path / "nmcli"
    nmcli.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(30)\n")
    nmcli.chmod(0o755)
    with pytest.raises(Failed) as failed:
        nccl_mtu.host_command(Module(), [str(nmcli), "-g", "GENERAL.CONNECTION", "device", "show", "eth1"],
                              timeout=1)
    result = failed.value.args[0]
    assert result["rc"] == 124
    assert result["msg"] == (f"`{nmcli} -g GENERAL.CONNECTION device show eth1` did not finish within 1 s; "
                             "is NetworkManager hung? (`systemctl status NetworkManager`)")


def test_a_failed_required_command_fails_with_its_error():
    with pytest.raises(Failed) as failed:
        nccl_mtu.host_command(Module(), [sys.executable, "-c", "import sys; sys.exit('no such device')"],
                              must_succeed=True)
    assert failed.value.args[0]["msg"].endswith("failed (1): no such device")


def test_a_read_returns_its_status_and_output():
    assert nccl_mtu.host_command(Module(), [sys.executable, "-c", "print(9000)"]) == (0, "9000\n")
    assert nccl_mtu.host_command(Module(), [sys.executable, "-c", "raise SystemExit(10)"]) == (10, "")
