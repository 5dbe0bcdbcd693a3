"""Gates on parsed nccl-tests runs, and the facts summary."""

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests.output import (
    NcclTestsParseError,
    evaluate_gates,
    failure_message,
    parse_file,
    summarize,
)
from conftest import SAMPLES


def run_of(name, index=0):
    return parse_file(str(SAMPLES / name))[index]


def gate(run, name, **options):
    return next(item for item in evaluate_gates(run, **options)["gates"] if item["name"] == name)


DEFAULTS = "h200-2host-socket-defaults.txt"  # busbw 2.22, 3.13, 3.29, 2.99 GB/s at 1, 8, 64, 512 MiB


def test_a_good_run_passes_the_default_gates():
    verdict = evaluate_gates(run_of(DEFAULTS), min_busbw_gbps=2.5, expected_ranks=2)
    assert verdict["passed"]
    assert [item["name"] for item in verdict["gates"]] == ["require_complete", "expected_ranks", "max_wrong",
                                                           "min_busbw_gbps"]
    assert set(verdict["gates"][0]) == {"name", "limit", "measured", "passed", "message"}


def test_min_busbw_defaults_to_the_largest_size():
    item = gate(run_of(DEFAULTS), "min_busbw_gbps", min_busbw_gbps=3.0)
    assert (item["measured"], item["passed"]) == (2.99, False)
    assert item["message"] == "busbw 2.99 GB/s at 536870912 B is below min_busbw_gbps 3"


def test_min_busbw_takes_the_lowest_at_or_above_the_size():
    run = run_of(DEFAULTS)
    item = gate(run, "min_busbw_gbps", min_busbw_gbps=2.5, gate_min_size_bytes=8388608)
    assert item["passed"] and item["measured"] == 2.99
    item = gate(run, "min_busbw_gbps", min_busbw_gbps=2.5, gate_min_size_bytes=1)
    assert not item["passed"] and item["message"] == "busbw 2.22 GB/s at 1048576 B is below min_busbw_gbps 2.5"


def test_min_busbw_with_no_size_that_large():
    item = gate(run_of(DEFAULTS), "min_busbw_gbps", min_busbw_gbps=1, gate_min_size_bytes=2 ** 40)
    assert not item["passed"] and "no size >= gate_min_size_bytes 1099511627776 was measured" in item["message"]


def test_the_slow_socket_run_names_its_numbers():
    item = gate(run_of("h200-2host-socket-nccl-debug-info.txt"), "min_busbw_gbps", min_busbw_gbps=2.5)
    assert item["message"] == "busbw 1.86 GB/s at 536870912 B is below min_busbw_gbps 2.5"


def test_one_rank_explains_its_zero_busbw():
    item = gate(run_of("h200-1gpu-all_reduce_perf.txt"), "min_busbw_gbps", min_busbw_gbps=1)
    assert not item["passed"] and "one rank: busbw is 0 by definition" in item["message"]


def test_expected_ranks():
    item = gate(run_of(DEFAULTS), "expected_ranks", expected_ranks=16)
    assert not item["passed"] and item["message"] == "2 ranks on 2 host(s) (node0, node1), expected_ranks is 16"
    item = gate(run_of("perf-li-plus-sendrecv-8gpu-inplace-na.txt"), "expected_ranks", expected_ranks=8)
    assert not item["passed"] and item["measured"] is None and "rank count is unknown" in item["message"]


def test_wrong_elements():
    run = run_of("perf-rdma-inc-2node-wrong-counts-g-format.txt")
    item = gate(run, "max_wrong")
    assert not item["passed"] and item["message"] == "1073741424 wrong elements is over max_wrong 0"
    assert gate(run, "max_wrong", max_wrong=2 ** 31)["passed"]
    assert "max_wrong" not in [item["name"] for item in evaluate_gates(run, max_wrong=None)["gates"]]


def test_unchecked_data_is_not_a_failure_but_is_said():
    item = gate(run_of("perf-superbench-a100-8gpu-allgather-na.txt"), "max_wrong")
    assert item["passed"] and item["measured"] is None and "-c 0" in item["message"]


def test_incomplete_runs_fail_with_their_failure_lines():
    item = gate(run_of("h200-2host-bad-socket-ifname.txt"), "require_complete")
    assert not item["passed"]
    assert "Test NCCL failure common.cu:1550" in item["message"]
    assert "NCCL WARN Bootstrap : no socket interface found" in item["message"]
    run = run_of("perf-h200-4gpu-failed-then-passed-two-runs.txt", 1)
    assert "no 'Avg bus bandwidth' footer" in gate(run, "require_complete")["message"]
    assert evaluate_gates(run, require_complete=False, min_busbw_gbps=300)["passed"]


def test_summarize_reports_the_chosen_run_and_every_run():
    runs = parse_file(str(SAMPLES / "perf-h200-4gpu-failed-then-passed-two-runs.txt"))
    facts = summarize(runs, require_complete=False)
    assert facts["run_index"] == 0 and facts["run_count"] == 2 and facts["nccl_version"] == "2.18.3"
    # The first run died ("Test CUDA failure"): an error line fails it even without require_complete.
    assert [line["passed"] for line in facts["runs"]] == [False, True]
    facts = summarize(runs, run_index=-1, min_busbw_gbps=400)
    assert facts["run_index"] == 1 and not facts["passed"]
    assert facts["runs"][1]["failures"] == [
        "the run is incomplete, no 'Avg bus bandwidth' footer: the run died or its output was cut short",
        "busbw 353.35 GB/s at 1074790400 B is below min_busbw_gbps 400"]
    assert failure_message(facts).startswith("run 1 (all_reduce_perf) failed: the run is incomplete")


def test_summarize_refuses_a_run_index_out_of_range():
    runs = parse_file(str(SAMPLES / DEFAULTS))
    with pytest.raises(NcclTestsParseError, match="run_index 1 is out of range: the output holds 1 run"):
        summarize(runs, run_index=1)
    with pytest.raises(NcclTestsParseError, match="no runs"):
        summarize([])
