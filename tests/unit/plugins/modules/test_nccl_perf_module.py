"""The nccl_perf module, run through main() as Ansible would."""

import json

import pytest
import yaml
from ansible.module_utils.testing import patch_module_args

from ansible_collections.ncclkit.cluster.plugins.modules import nccl_perf
from conftest import SAMPLES

DEFAULTS = str(SAMPLES / "h200-2host-socket-defaults.txt")
SLOW = str(SAMPLES / "h200-2host-socket-nccl-debug-info.txt")


def run_module(capsys, args):
    with patch_module_args(args), pytest.raises(SystemExit) as exit_info:
        nccl_perf.main()
    return exit_info.value.code, json.loads(capsys.readouterr().out)


def test_a_passing_run_sets_the_facts(capsys):
    code, result = run_module(capsys, {"path": DEFAULTS, "min_busbw_gbps": 2.5, "expected_ranks": 2})
    assert code == 0 and result["changed"] is False and "failed" not in result
    facts = result["ansible_facts"]["nccl_perf"]
    assert facts["passed"] and facts["peak_busbw_gbps"] == 3.29 and facts["hosts"] == ["node0", "node1"]
    assert facts["run_count"] == 1 and facts["runs"][0]["passed"]


def test_content_instead_of_a_path(capsys):
    with open(DEFAULTS) as handle:
        code, result = run_module(capsys, {"content": handle.read()})
    assert code == 0 and result["ansible_facts"]["nccl_perf"]["largest_size_busbw_gbps"] == 2.99


def test_a_failed_gate_fails_with_the_numbers_and_keeps_the_facts(capsys):
    code, result = run_module(capsys, {"path": SLOW, "min_busbw_gbps": 2.5})
    assert code == 1 and result["failed"]
    assert result["msg"] == ("run 0 (all_reduce_perf) failed: busbw 1.86 GB/s at 536870912 B is below "
                             "min_busbw_gbps 2.5")
    facts = result["ansible_facts"]["nccl_perf"]
    assert facts["passed"] is False and facts["largest_size_busbw_gbps"] == 1.86


def test_fail_on_gates_false_reports_instead(capsys):
    code, result = run_module(capsys, {"path": SLOW, "min_busbw_gbps": 2.5, "fail_on_gates": False})
    assert code == 0 and result["ansible_facts"]["nccl_perf"]["passed"] is False


def test_expected_ranks_mismatch(capsys):
    code, result = run_module(capsys, {"path": DEFAULTS, "expected_ranks": 16})
    assert code == 1 and "2 ranks on 2 host(s) (node0, node1), expected_ranks is 16" in result["msg"]


def test_an_incomplete_run_fails_with_its_failure(capsys):
    code, result = run_module(capsys, {"path": str(SAMPLES / "h200-2host-bad-socket-ifname.txt")})
    assert code == 1 and "the run is incomplete" in result["msg"]
    assert "no socket interface found" in result["msg"]


def test_check_mode_reads_all_the_same(capsys):
    code, result = run_module(capsys, {"path": DEFAULTS, "min_busbw_gbps": 2.5, "_ansible_check_mode": True})
    assert code == 0 and result["changed"] is False and result["ansible_facts"]["nccl_perf"]["passed"]


def test_run_index_picks_a_run(capsys):
    path = str(SAMPLES / "perf-skypilot-gke-h200-2node-allgather.txt")
    code, result = run_module(capsys, {"path": path, "run_index": 1, "expected_ranks": 16})
    facts = result["ansible_facts"]["nccl_perf"]
    assert code == 0 and facts["run_index"] == 1 and facts["hosts"] == ["nccl-test-host-1", "nccl-test-host-2"]
    code, result = run_module(capsys, {"path": path, "run_index": 2})
    assert code == 1 and "run_index 2 is out of range: the output holds 2 run(s)" in result["msg"]


def test_unchecked_data_and_one_rank_warn(capsys):
    code, result = run_module(capsys, {"path": str(SAMPLES / "perf-superbench-a100-8gpu-allgather-na.txt")})
    # ansible-core 2.19 returns warnings as structured events; their text is what matters.
    assert code == 0 and "did not check its results (-c 0)" in json.dumps(result["warnings"])
    code, result = run_module(capsys, {"path": str(SAMPLES / "h200-1gpu-all_reduce_perf.json")})
    assert code == 0 and "the run has one rank" in json.dumps(result["warnings"])
    assert "planted-secret" not in json.dumps(result)


def test_json_content_never_comes_back_with_its_secrets(capsys):
    content = (SAMPLES / "h200-1gpu-all_reduce_perf.json").read_text()
    code, result = run_module(capsys, {"content": content})
    assert code == 0 and result["ansible_facts"]["nccl_perf"]["env"] == {"NCCL_DEBUG": "WARN",
                                                                         "CUDA_HOME": "/usr/local/cuda"}
    assert "planted-secret" not in json.dumps(result)


@pytest.mark.parametrize("args, message", [
    ({"content": "hello\n"}, "no nccl-tests output found"),
    ({"content": ""}, "the input is empty"),
    ({"path": "/nonexistent/all_reduce.txt"}, "/nonexistent/all_reduce.txt does not exist on this host"),
    ({"path": str(SAMPLES)}, "is a directory"),
    ({"content": '{"version": 3, "results": ['}, "not valid JSON"),
])
def test_bad_input_fails_with_the_cause_not_a_traceback(capsys, args, message):
    code, result = run_module(capsys, args)
    assert code == 1 and message in result["msg"]
    assert "Traceback" not in result["msg"] and "exception" not in result
    assert "ansible_facts" not in result


def test_binary_file(capsys, tmp_path):
    binary = tmp_path / "all_reduce_perf"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)))
    code, result = run_module(capsys, {"path": str(binary)})
    assert code == 1 and "binary" in result["msg"]


def test_max_size_mib_bounds_the_file_read(capsys, tmp_path):
    big = tmp_path / "long.txt"
    with open(big, "wb") as handle:  # sparse: 65 MiB on paper
        handle.truncate(65 * 1024 * 1024)
    code, result = run_module(capsys, {"path": str(big)})
    assert code == 1 and "over the 67108864-byte limit" in result["msg"]
    code, result = run_module(capsys, {"path": str(big), "max_size_mib": 0})
    assert code == 1 and "max_size_mib is 0; give a size of 1 MiB or more" in result["msg"]
    code, result = run_module(capsys, {"path": DEFAULTS, "max_size_mib": 1})
    assert code == 0 and result["ansible_facts"]["nccl_perf"]["row_count"] == 4


@pytest.mark.parametrize("args, message", [
    ({}, "one of the following is required: path, content"),
    ({"path": DEFAULTS, "content": "# nThread 1 nGpus 1\n"}, "parameters are mutually exclusive: path|content"),
])
def test_path_or_content(capsys, args, message):
    code, result = run_module(capsys, args)
    assert code == 1 and message in result["msg"]


def test_documentation_matches_the_argument_spec():
    documentation = yaml.safe_load(nccl_perf.DOCUMENTATION)
    yaml.safe_load(nccl_perf.EXAMPLES)
    returned = yaml.safe_load(nccl_perf.RETURN)
    assert documentation["module"] == "nccl_perf" and documentation["attributes"]["check_mode"]["support"] == "full"
    documented = documentation["options"]
    spec = {"path": ("path", None), "content": ("str", None), "min_busbw_gbps": ("float", None),
            "gate_min_size_bytes": ("int", None), "max_wrong": ("int", 0), "expected_ranks": ("int", None),
            "require_complete": ("bool", True), "run_index": ("int", 0), "fail_on_gates": ("bool", True),
            "max_size_mib": ("int", 64)}
    assert {name: (option["type"], option.get("default")) for name, option in documented.items()} == spec
    fact_keys = set(returned["ansible_facts"]["contains"]["nccl_perf"]["contains"])
    with open(DEFAULTS) as handle:
        from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests.output import parse, summarize
        assert set(summarize(parse(handle.read()))) == fact_keys
