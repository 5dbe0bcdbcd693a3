"""The nccl_report module through main(): stage, write, check mode, bad input."""

import json
import os
from unittest.mock import patch

import pytest
import yaml
from ansible.module_utils.testing import patch_module_args

from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests.output import parse_file, summarize
from ansible_collections.ncclkit.cluster.plugins.modules import nccl_report
from conftest import SAMPLES

NAME = "20261202T090419Z"


def run_module(capsys, args):
    with patch_module_args(args), pytest.raises(SystemExit) as exit_info:
        nccl_report.main()
    return exit_info.value.code, json.loads(capsys.readouterr().out)


def data(min_busbw_gbps=2.5):
    perf = summarize(parse_file(str(SAMPLES / "h200-2host-socket-defaults.txt")), expected_ranks=2,
                     min_busbw_gbps=min_busbw_gbps)
    return {"hosts": {"node1": {"gpus": 1}, "node2": {"gpus": 1}},
            "runs": [{"name": "multi", "host": "node1", "hosts": ["node1", "node2"], "rc": 0, "perf": perf}]}


def test_stage_then_write_gives_a_complete_folder_and_changes_nothing_reported(capsys, tmp_path):
    code, staged = run_module(capsys, {"parent": str(tmp_path), "name": NAME, "state": "staged"})
    assert code == 0 and staged["changed"] is False
    assert os.path.dirname(staged["staging"]) == str(tmp_path) and os.path.isdir(staged["staging"] + "/raw")
    assert os.path.basename(staged["staging"]).startswith(f".{NAME}.")
    code, written = run_module(capsys, {"parent": str(tmp_path), "name": NAME, "data": data(),
                                        "staging": staged["staging"]})
    assert code == 0 and written["changed"] is False and written["passed"] is True
    assert written["path"] == str(tmp_path / NAME) and sorted(os.listdir(tmp_path)) == [NAME]
    assert written["msg"] == f"nccl_validate PASSED: 1 run(s), 1 passed\nreport: {tmp_path / NAME}"


def test_a_failed_check_is_returned_not_raised(capsys, tmp_path):
    code, written = run_module(capsys, {"parent": str(tmp_path), "name": NAME, "data": data(3.0)})
    assert code == 0 and "failed" not in written and written["passed"] is False
    assert written["reasons"] == ["multi-node across node1, node2: busbw 2.99 GB/s at 536870912 B is below "
                                  "min_busbw_gbps 3"]
    assert written["msg"].splitlines()[-1] == f"report: {tmp_path / NAME}"
    assert json.loads((tmp_path / NAME / "report.json").read_text())["verdict"] == "failed"


def test_check_mode_writes_nothing_but_gives_the_verdict(capsys, tmp_path):
    code, staged = run_module(capsys, {"parent": str(tmp_path / "reports"), "name": NAME, "state": "staged",
                                       "_ansible_check_mode": True})
    assert code == 0 and staged["changed"] is False and staged["staging"] == ""
    assert staged["msg"] == "staging folder (check mode: none)"
    assert not (tmp_path / "reports").exists()
    code, result = run_module(capsys, {"parent": str(tmp_path), "name": NAME, "data": data(3.0),
                                       "_ansible_check_mode": True})
    assert code == 0 and result["changed"] is False
    assert result["passed"] is False and result["reasons"] and result["path"] == "" and os.listdir(tmp_path) == []


def test_bad_data_fails_with_the_cause_not_a_traceback(capsys, tmp_path):
    code, result = run_module(capsys, {"parent": str(tmp_path), "name": NAME, "data": {"runs": [None]}})
    assert code == 1 and "runs must hold dicts, not None" in result["msg"] and os.listdir(tmp_path) == []


def test_discarded_is_no_state(capsys, tmp_path):
    code, result = run_module(capsys, {"parent": str(tmp_path), "name": NAME, "state": "discarded"})
    assert code == 1 and "value of state must be one of: staged, written, redacted" in result["msg"]


def test_an_unwritable_parent_fails_with_the_fix(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, result = run_module(capsys, {"parent": str(blocker), "name": NAME, "state": "staged"})
    assert code == 1 and "set nccl_validate_report_parent to a folder" in result["msg"]
    code, result = run_module(capsys, {"parent": str(tmp_path), "name": "../up", "state": "staged"})
    assert code == 1 and "plain folder name" in result["msg"]


def real_argument_spec(capsys):
    """The argument_spec main() gives AnsibleModule, captured by running main() with it."""
    captured = {}
    real = nccl_report.AnsibleModule

    def capture(argument_spec, **kwargs):
        captured.update(argument_spec=argument_spec, **kwargs)
        return real(argument_spec, **kwargs)

    with patch.object(nccl_report, "AnsibleModule", capture):
        run_module(capsys, {"parent": "/nonexistent", "name": NAME, "_ansible_check_mode": True})
    return captured


def test_documentation_matches_the_argument_spec(capsys):
    documentation = yaml.safe_load(nccl_report.DOCUMENTATION)
    yaml.safe_load(nccl_report.EXAMPLES)
    returned = yaml.safe_load(nccl_report.RETURN)
    captured = real_argument_spec(capsys)
    spec = captured["argument_spec"]
    assert documentation["module"] == "nccl_report"
    assert (documentation["attributes"]["check_mode"]["support"] == "full") is captured["supports_check_mode"]
    assert set(documentation["options"]) == set(spec)
    for name, option in documentation["options"].items():
        for key in ("type", "required", "default", "choices"):
            assert option.get(key) == spec[name].get(key), (name, key)
    assert set(returned) == {"path", "staging", "passed", "msg", "reasons", "summary", "redacted"}


def test_redacted_rewrites_the_j_files_on_the_host_before_they_are_fetched(capsys, tmp_path):
    raw = tmp_path / "single.json"
    raw.write_text('{"env": ["NCCL_DEBUG=INFO", "HF_TOKEN=abc"], "results": []}')
    raw.chmod(0o644)
    code, result = run_module(capsys, {"state": "redacted", "paths": [str(raw), str(tmp_path / "missing.json")]})
    assert code == 0 and result["redacted"] == [str(raw)] and result["changed"] is False
    assert "HF_TOKEN" not in raw.read_text() and "NCCL_DEBUG=INFO" in raw.read_text()
    assert raw.stat().st_mode & 0o777 == 0o600


def test_staged_and_written_need_the_parent_and_the_name(capsys):
    code, result = run_module(capsys, {"state": "staged", "name": NAME})
    assert code == 1 and "parent" in result["msg"]
