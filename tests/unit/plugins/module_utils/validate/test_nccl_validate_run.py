"""One nccl_validate benchmark launch (module_utils/validate/run.py and its filters): why it
cannot start, its command line, whether it is diagnosed, and its record."""

from __future__ import annotations

import pytest

from ansible_collections.ncclkit.cluster.plugins.filter.validate import (
    FilterModule as ArgvFilter,
)
from ansible_collections.ncclkit.cluster.plugins.filter.validate import (
    FilterModule as DiagnosisFilter,
)
from ansible_collections.ncclkit.cluster.plugins.filter.validate import (
    FilterModule as ReasonFilter,
)
from ansible_collections.ncclkit.cluster.plugins.filter.validate import (
    FilterModule as RecordFilter,
)

not_run_reason = ReasonFilter().filters()["nccl_validate_not_run_reason"]
argv = ArgvFilter().filters()["nccl_validate_argv"]
needs_diagnosis = DiagnosisFilter().filters()["nccl_validate_needs_diagnosis"]
run_record = RecordFilter().filters()["nccl_validate_run_record"]

BIN = "/opt/ncclkit/nccl-tests/current/bin/all_reduce_perf"
MPIRUN = "/etc/ncclkit/ncclkit-mpirun"
HOST = {"bin_dir": "/opt/ncclkit/nccl-tests/current/bin", "nccl_tests": {"reason": "", "version": "v2.19.6"}}
SIZES = {"min_bytes": "8", "max_bytes": "1G", "step_factor": 2, "iters": 20, "warmup_iters": 5, "check": 1}


def stat(path, executable=True):
    return {"item": path, "stat": {"exists": True, "executable": executable}}


def test_a_run_with_its_programs_in_place_can_start():
    assert not_run_reason([stat(BIN), stat(MPIRUN)], HOST, "multi", [MPIRUN], "node1") == ""
    assert not_run_reason([stat(BIN)], HOST, "single", [], "node1") == ""


def test_without_nccl_tests_the_reason_says_how_to_get_it():
    host = {"bin_dir": "", "nccl_tests": {"reason": "no GPU: nvidia-smi not found"}}
    assert not_run_reason([], host, "single", [], "node1") == (
        "nccl-tests is not available (no GPU: nvidia-smi not found): run the nccl_tests role, or set "
        "nccl_validate_bin_dir to a folder holding all_reduce_perf")


def test_a_multi_node_run_without_launcher_names_the_fact_and_the_fix():
    reason = not_run_reason([stat(BIN)], HOST, "multi", [], "node1")
    assert reason.startswith("no launcher for the multi-node run: ncclkit_launch.mpirun is not set")
    assert not_run_reason([stat(BIN)], HOST, "single", [], "node1") == ""


def test_missing_or_not_executable_programs_are_all_named():
    missing = {"item": MPIRUN, "stat": {"exists": False}}
    reason = not_run_reason([stat(BIN, executable=False), missing], HOST, "multi", [MPIRUN], "node2")
    assert reason == (f"{BIN}, {MPIRUN} is missing or not executable on node2: run the nccl_tests and "
                      "nccl_profile roles, or correct nccl_validate_bin_dir and nccl_validate_mpirun")


def test_the_command_line_keeps_the_sizes_as_given_and_adds_json_when_asked():
    assert argv([], BIN, SIZES, 8, "/tmp/s/single.json", True) == [
        BIN, "-b", "8", "-e", "1G", "-f", "2", "-g", "8", "-n", "20", "-w", "5", "-c", "1", "-J", "/tmp/s/single.json"]
    assert argv([MPIRUN, "-np", "2"], BIN, SIZES, 1, "/tmp/s/multi.json", "false")[:4] == [MPIRUN, "-np", "2", BIN]
    assert "-J" not in argv([MPIRUN], BIN, SIZES, 1, "/tmp/s/multi.json", "false")
    assert "-J" in argv([], BIN, SIZES, 1, "/x.json", "yes")


PASSED = {"ansible_facts": {"nccl_perf": {"passed": True, "busbw_peak_gbps": 350.1}}}
GATE_FAILED = {"ansible_facts": {"nccl_perf": {"passed": False}}}
UNREADABLE = {"failed": True, "msg": "no result rows in /tmp/s/multi.txt"}


@pytest.mark.parametrize("run,perf,transport,expected", [
    ({"rc": 0}, PASSED, "any", False),
    ({"rc": 0}, PASSED, "ib", True),   # a passing run is read for a silent fall-back to sockets
    ({"rc": 1}, PASSED, "any", True),
    ({}, PASSED, "any", True),          # nccl_run returned no rc
    ({"rc": 0}, GATE_FAILED, "any", True),
    ({"rc": 0}, UNREADABLE, "any", True),
])
def test_what_is_diagnosed(run, perf, transport, expected):
    assert needs_diagnosis(run, perf, transport) is expected


CONTEXT = {"name": "multi", "host": "node1", "hosts": ["node1", "node2"], "command": [MPIRUN, BIN],
           "timeout_s": "600", "expected_ranks": "16", "expected_transport": "ib", "min_busbw_gbps": "100"}
FETCHED = {"results": [
    {"item": "multi.txt", "dest": "/tmp/ncclkit-report-x/raw/node1/multi.txt", "changed": True},
    {"item": "multi.stderr.txt", "dest": "/tmp/ncclkit-report-x/raw/node1/multi.stderr.txt", "changed": True},
    {"item": "multi.json", "msg": "the remote file does not exist, not transferring, ignored", "changed": False},
]}
SKIPPED = {"skipped": True, "changed": False, "false_condition": "..."}


def test_the_record_of_a_passing_run():
    record = run_record({"rc": 0, "duration_s": 12.5, "forensics": [], "stderr_lines": []}, CONTEXT, PASSED,
                        SKIPPED, FETCHED)
    assert record == {
        "name": "multi", "host": "node1", "hosts": ["node1", "node2"], "command": [MPIRUN, BIN], "ran": True,
        "rc": 0, "timeout_s": 600, "duration_s": 12.5, "forensics": [], "expected_ranks": 16,
        "expected_transport": "ib", "min_busbw_gbps": 100.0, "perf": PASSED["ansible_facts"]["nccl_perf"],
        "perf_error": None, "diagnosis": None, "stderr_tail": [],
        "raw": ["raw/node1/multi.txt", "raw/node1/multi.stderr.txt"],
    }
    assert list(record) == ["name", "host", "hosts", "command", "ran", "rc", "timeout_s", "duration_s", "forensics",
                            "expected_ranks", "expected_transport", "min_busbw_gbps", "perf", "perf_error",
                            "diagnosis", "stderr_tail", "raw"]


def test_the_record_of_a_hung_run_keeps_the_evidence_the_diagnosis_and_why_perf_failed():
    run = {"rc": 124, "timed_out": True, "duration_s": "600.2", "forensics": ["node1: py-spy: ..."],
           "stderr_lines": ["mpirun: killed"]}
    diagnosis = {"findings": [{"code": "hang"}], "ansible_facts": {"nccl_diagnose": {"hosts": {"node1": {}}}}}
    record = run_record(run, CONTEXT, UNREADABLE, diagnosis, {"results": []})
    assert record["rc"] == 124 and record["duration_s"] == 600.2
    assert record["forensics"] == ["node1: py-spy: ..."]
    assert record["perf"] is None and record["perf_error"] == "no result rows in /tmp/s/multi.txt"
    assert record["diagnosis"] == {"findings": [{"code": "hang"}], "hosts": {"node1": {}}}
    assert record["stderr_tail"] == ["mpirun: killed"] and record["raw"] == []


def test_a_run_that_nccl_run_could_not_start_is_recorded_with_its_message():
    record = run_record({"failed": True, "msg": "timeout: not found"}, CONTEXT, {}, SKIPPED, {})
    assert record["rc"] == -1 and record["duration_s"] == 0.0 and record["forensics"] == []
    assert record["stderr_tail"] == ["timeout: not found"]
    assert record["perf"] is None and record["perf_error"] == ""
