"""The recorded nccl-tests outputs in tests/samples (each names its source in its first line, or in
tests/samples/SOURCES.md), checked against values read off each file by hand, not from the parser."""

from pathlib import Path

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.log import read_nccl_log_files
from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests.output import parse_file
from conftest import SAMPLES

# Error states: "complete" (footer, no failure line), "failed" (a Test/launcher failure line),
# "cut" (no footer and no failure line: the output stops).
# file: (peak out-of-place busbw GB/s, ranks, distinct hosts, error state), first run of the file.
PERF_BY_HAND = {
    "04-nccl-ebpf-2rank-1gpu-hostid-socket-nccltests2.18.txt": (2.30, 2, 1, "complete"),
    "06a-nccl-tests-issue287-1gpu-busbw0.txt": (0.0, 1, 1, "complete"),
    "06c-nccl-tests-issue287-2gpu-nccl-debug-info-failure.txt": (None, 2, 1, "failed"),
    "h200-1gpu-all_reduce_perf.json": (0.0, 1, 1, "complete"),
    "h200-1gpu-all_reduce_perf.txt": (0.0, 1, 1, "complete"),
    "h200-2host-bad-socket-ifname.txt": (None, 2, 2, "failed"),
    "h200-2host-socket-article-tuning.txt": (2.08, 2, 2, "complete"),
    "h200-2host-socket-defaults.txt": (3.29, 2, 2, "complete"),
    "h200-2host-socket-nccl-debug-info.txt": (1.86, 2, 2, "complete"),
    # Added for this check (their first line names the source).
    "perf-a3mega-h100-16rank-2node.txt": (338.82, 16, 2, "complete"),
    "perf-eks-efa-a10g-1rank-cut.txt": (0.0, 1, 1, "cut"),
    # nccl_validate's own runs on the lent H200 (docs/benchmarks.md), NCCL_DEBUG=INFO in stdout.
    "h200-validate-1host-single.txt": (0.0, 1, 1, "complete"),
    "h200-validate-2simhosts-multi.txt": (3.32, 2, 2, "complete"),
    "h200-validate-2simhosts-multi.json": (3.320265, 2, 2, "complete"),
}

# file: (hosts named, NCCL versions logged, {(error code, host)}, {host: transport}).
DIAGNOSIS_BY_HAND = {
    "04-nccl-ebpf-2rank-1gpu-hostid-socket-nccltests2.18.txt": ({"lab"}, [], set(), {}),
    "06a-nccl-tests-issue287-1gpu-busbw0.txt": ({"GENOA-06"}, [], set(), {}),
    "06c-nccl-tests-issue287-2gpu-nccl-debug-info-failure.txt": (
        {"GENOA-06"}, ["2.25.1+cuda12.8"],
        {("test_nccl_failure", "GENOA-06"), ("cuda_error", "GENOA-06")}, {"GENOA-06": "Socket"}),
    "h200-1gpu-all_reduce_perf.json": (set(), [], set(), {}),
    "h200-1gpu-all_reduce_perf.txt": ({"vm"}, [], set(), {}),
    # Open MPI's "Process name ... Exit code" lines name the dead rank (0) but not its machine; nccl-tests'
    # rank table ("#  Rank  0 Group  0 Pid 2841 on node0") does.
    "h200-2host-bad-socket-ifname.txt": (
        {"node0", "node1"}, [],
        {("no_socket_interface", "node0"), ("test_nccl_failure", "node0"), ("rank_failed", "node0")}, {}),
    "h200-2host-socket-article-tuning.txt": ({"node0", "node1"}, [], set(), {}),
    "h200-2host-socket-defaults.txt": ({"node0", "node1"}, [], set(), {}),
    "h200-2host-socket-nccl-debug-info.txt": (
        {"node0", "node1"}, ["2.28.9+cuda13.0"], set(), {"node0": "Socket", "node1": "Socket"}),
    # Cut before its footer: a run whose end the output does not show is never healthy.
    "perf-eks-efa-a10g-1rank-cut.txt": (
        {"test-nccl-worker-0"}, ["2.22.3+cuda12.2"], {("incomplete_run", "test-nccl-worker-0")},
        {"test-nccl-worker-0": "OFI(EFA)"}),
    "log-rccl-lumi-connect-no-route.txt": ({"nid005000"}, [], {("no_route", "nid005000")}, {}),
    "h200-validate-1host-single.txt": ({"vm"}, ["2.28.9+cuda13.0"], set(), {}),
    "h200-validate-2simhosts-multi.txt": (
        {"node0", "node1"}, ["2.28.9+cuda13.0"], set(), {"node0": "Socket", "node1": "Socket"}),
}


def error_state(run):
    if run["complete"]:
        return "complete"
    return "failed" if run["errors"] else "cut"


@pytest.mark.parametrize("name", sorted(PERF_BY_HAND))
def test_peak_ranks_hosts_and_error_state(name):
    peak, ranks, hosts, state = PERF_BY_HAND[name]
    run = parse_file(str(SAMPLES / name))[0]
    assert run["peak_busbw_gbps"] == (pytest.approx(peak) if peak is not None else None)
    assert run["ranks"] == ranks
    assert len(run["hosts"]) == hosts
    assert error_state(run) == state
    assert bool(run["errors"]) == (state == "failed")


@pytest.mark.parametrize("name", sorted(DIAGNOSIS_BY_HAND))
def test_diagnosis_hosts_versions_errors_and_transport(name):
    hosts, versions, errors, transports = DIAGNOSIS_BY_HAND[name]
    result = read_nccl_log_files([Path(SAMPLES / name)])
    assert set(result["hosts"]) == hosts
    assert result["nccl_versions"] == versions
    assert {(f["code"], f["host"]) for f in result["findings"] if f["severity"] == "error"} == errors
    for host, transport in transports.items():
        assert result["hosts"][host]["transport"] == transport
    assert result["multi_node"] == (len(hosts) > 1)


def test_a_run_meant_for_two_nodes_that_ran_one_rank_fails_the_rank_gate():
    from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests.output import evaluate_gates

    run = parse_file(str(SAMPLES / "perf-eks-efa-a10g-1rank-cut.txt"))[0]
    verdict = evaluate_gates(run, expected_ranks=2)
    failed = {gate["name"]: gate["message"] for gate in verdict["gates"] if not gate["passed"]}
    assert set(failed) == {"require_complete", "expected_ranks"}
    assert failed["expected_ranks"] == "1 ranks on 1 host(s) (test-nccl-worker-0), expected_ranks is 2"
    assert "no 'Avg bus bandwidth' footer" in failed["require_complete"]


def test_the_rccl_warning_names_the_unreachable_peer():
    result = read_nccl_log_files([SAMPLES / "log-rccl-lumi-connect-no-route.txt"])
    finding, = [f for f in result["findings"] if f["code"] == "no_route"]
    assert "10.120.24.10 port 52061" in finding["cause"] and finding["line"] == 2


def test_the_h200_reports_agree_with_their_raw_outputs():
    """The reports nccl_validate wrote on the H200 carry what the parser reads from the raw files."""
    import json

    for report_name, raw_name, title in (
            ("h200-validate-1host-report.json", "h200-validate-1host-single.txt", "single-node on vm"),
            ("h200-validate-2simhosts-report.json", "h200-validate-2simhosts-multi.txt",
             "multi-node across node0, node1")):
        report = json.loads((SAMPLES / report_name).read_text())
        assert report["passed"] is True
        run, = (run for run in report["runs"] if run["title"] == title)
        parsed = parse_file(str(SAMPLES / raw_name))[0]
        assert run["perf"]["peak_busbw_gbps"] == parsed["peak_busbw_gbps"]
        assert run["perf"]["ranks"] == parsed["ranks"] == run["expected_ranks"]
        assert [row["size_bytes"] for row in run["perf"]["rows"]] == [row["size_bytes"] for row in parsed["rows"]]
