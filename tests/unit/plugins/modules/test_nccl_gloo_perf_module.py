"""The nccl_gloo_perf module, run through main() as Ansible would: every node's log read as one
job, a missing log counted as empty, bad limits refused with one line."""

import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.ncclkit.cluster.plugins.modules import nccl_gloo_perf


def line(rank, host, busbw):
    return "ncclkit-gloo " + json.dumps({"rank": rank, "world": 2, "host": host, "bytes": 4194304, "iters": 5,
                                         "seconds": 0.01, "algbw_gbps": busbw, "busbw_gbps": busbw,
                                         "correct": True, "torch": "2.13.0+cpu"})


def run_module(capsys, args):
    with patch_module_args(args), pytest.raises(SystemExit) as exit_info:
        nccl_gloo_perf.main()
    return exit_info.value.code, json.loads(capsys.readouterr().out)


def test_the_logs_of_every_node_are_one_run(tmp_path, capsys):
    (tmp_path / "node1.txt").write_text("[1,0]<stdout>: " + line(0, "node1", 2.0) + "\n")
    (tmp_path / "node2.txt").write_text("warming up\n" + line(1, "node2", 1.5) + "\n")
    code, result = run_module(capsys, {"path": [str(tmp_path / "node1.txt"), str(tmp_path / "node2.txt")],
                                       "expected_ranks": 2, "min_busbw_gbps": 1.0})
    facts = result["ansible_facts"]["nccl_gloo_perf"]
    assert code == 0 and not result["changed"] and facts["passed"]
    assert facts["hosts"] == ["node1", "node2"] and facts["peak_busbw_gbps"] == 1.5


def test_a_missing_log_is_a_missing_rank_not_a_crash(tmp_path, capsys):
    (tmp_path / "node1.txt").write_text(line(0, "node1", 2.0) + "\n")
    code, result = run_module(capsys, {"path": [str(tmp_path / "node1.txt"), str(tmp_path / "gone.txt")],
                                       "expected_ranks": 2})
    facts = result["ansible_facts"]["nccl_gloo_perf"]
    assert code == 0 and not facts["passed"]
    assert any(not gate["passed"] and "missing: rank(s) 1" in gate["message"] for gate in facts["gates"])


def test_bad_limits_are_refused(tmp_path, capsys):
    code, result = run_module(capsys, {"path": [str(tmp_path / "x")], "expected_ranks": 0})
    assert code == 1 and result["msg"] == ("nccl_gloo_perf: expected_ranks must be at least 1 and min_busbw_gbps "
                                           "not negative (got 0 and 0.0)")
