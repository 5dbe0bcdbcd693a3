"""nccl_state_stamp driven through main(): record, then check converged with the facts restored;
a file removed by hand or other inputs make the check not converged; check mode records nothing;
recording reports no change; the stamp is owner-only."""

import json
import stat

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.ncclkit.cluster.plugins.modules import nccl_state_stamp


def run(capsys, **args):
    with patch_module_args(args), pytest.raises(SystemExit) as exit_info:
        nccl_state_stamp.main()
    return exit_info.value.code, json.loads(capsys.readouterr().out)


def test_record_then_check(tmp_path, capsys):
    conf = tmp_path / "nccl.conf"
    conf.write_text("NCCL_SOCKET_IFNAME=eth1\n")
    common = {"name": "nccl_profile", "inputs": {"env": {"NCCL_SOCKET_IFNAME": "eth1"}}, "files": [str(conf)],
              "folder": str(tmp_path / "state")}
    code, result = run(capsys, **common)
    assert code == 0 and result["converged"] is False and result["reason"] == "no stamp recorded yet"

    code, result = run(capsys, state="record", facts={"ncclkit_nccl_env": {"NCCL_SOCKET_IFNAME": "eth1"}}, **common)
    assert code == 0 and result["changed"] is False
    stamp = tmp_path / "state" / "nccl_profile.json"
    assert stat.S_IMODE(stamp.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "state").stat().st_mode) == 0o700

    code, result = run(capsys, **common)
    assert result["converged"] is True
    assert result["facts"] == {"ncclkit_nccl_env": {"NCCL_SOCKET_IFNAME": "eth1"}}

    code, result = run(capsys, **{**common, "inputs": {"env": {"NCCL_SOCKET_IFNAME": "eth0"}}})
    assert result["converged"] is False and "facts" not in result

    conf.unlink()
    code, result = run(capsys, **common)
    assert result["converged"] is False and result["reason"] == f"file {conf} changed since the stamp"


def test_check_mode_records_nothing(tmp_path, capsys):
    code, result = run(capsys, name="x", state="record", inputs=1, folder=str(tmp_path / "state"),
                       _ansible_check_mode=True)
    assert code == 0 and not (tmp_path / "state").exists()


def test_a_bad_name_is_one_line(tmp_path, capsys):
    code, result = run(capsys, name="../x", inputs=1, folder=str(tmp_path))
    assert code == 1 and result["msg"].startswith("nccl_state_stamp: stamp name '../x' is not a plain name")
