"""The nccl-tests parser on the real outputs in tests/samples."""

import json

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests.output import (
    NcclTestsParseError,
    parse,
    parse_file,
)
from conftest import SAMPLES

RUN_KEYS = {
    "source", "collective", "nccl_tests_version", "nccl_version", "ranks", "hosts", "devices", "rows", "row_count",
    "peak_busbw_gbps", "peak_busbw_size_bytes", "largest_size_bytes", "largest_size_busbw_gbps",
    "avg_busbw_gbps", "avg_busbw_ok", "wrong_total", "data_checked", "out_of_bounds", "complete",
    "errors", "warnings", "env", "args", "config", "json_version", "start_time", "end_time",
}

# file: one dict per run, with the values read off the file by hand.
EXPECTED = {
    "h200-2host-socket-defaults.txt": [dict(
        collective="all_reduce_perf", nccl_tests_version="2.19.6", nccl_version="2.28.9", ranks=2,
        hosts=["node0", "node1"], peak_busbw_gbps=3.29, peak_busbw_size_bytes=67108864,
        largest_size_bytes=536870912, largest_size_busbw_gbps=2.99, avg_busbw_gbps=2.91222,
        wrong_total=0, complete=True)],
    "h200-2host-socket-article-tuning.txt": [dict(
        ranks=2, hosts=["node0", "node1"], peak_busbw_gbps=2.08, peak_busbw_size_bytes=536870912,
        largest_size_busbw_gbps=2.08, avg_busbw_gbps=1.8266, complete=True)],
    "h200-2host-socket-nccl-debug-info.txt": [dict(
        ranks=2, hosts=["node0", "node1"], nccl_version="2.28.9", peak_busbw_gbps=1.86,
        peak_busbw_size_bytes=134217728, largest_size_busbw_gbps=1.86, avg_busbw_gbps=0.569271,
        complete=True, errors=[])],
    "h200-2host-bad-socket-ifname.txt": [dict(
        ranks=2, hosts=["node0", "node1"], nccl_version="2.28.9", rows=[], complete=False,
        peak_busbw_gbps=None, avg_busbw_gbps=None)],
    "h200-1gpu-all_reduce_perf.txt": [dict(
        ranks=1, hosts=["vm"], peak_busbw_gbps=0.0, largest_size_bytes=536870912, avg_busbw_gbps=0.0,
        wrong_total=0, complete=True)],
    "h200-1gpu-all_reduce_perf.json": [dict(
        source="json", collective="all_reduce_perf", nccl_version="2.28.9", ranks=1, hosts=["vm"],
        largest_size_bytes=536870912, avg_busbw_gbps=0.0, avg_busbw_ok=None, wrong_total=0,
        out_of_bounds={"count": 0, "ok": True}, complete=True, errors=[])],
    "04-nccl-ebpf-2rank-1gpu-hostid-socket-nccltests2.18.txt": [dict(
        collective="all_reduce_perf", nccl_tests_version="2.18.0", nccl_version="2.29.7", ranks=2,
        hosts=["lab"], peak_busbw_gbps=2.30, peak_busbw_size_bytes=134217728, avg_busbw_gbps=1.57614,
        complete=True)],
    "06a-nccl-tests-issue287-1gpu-busbw0.txt": [dict(
        collective="all_reduce_perf", ranks=1, hosts=["GENOA-06"], peak_busbw_gbps=0.0,
        largest_size_bytes=134217728, avg_busbw_gbps=0.0, complete=True)],
    "06c-nccl-tests-issue287-2gpu-nccl-debug-info-failure.txt": [dict(
        nccl_version="2.25.1", ranks=2, hosts=["GENOA-06"], rows=[], complete=False)],
    "perf-skypilot-gke-h200-2node-allgather.txt": [
        dict(ranks=16, hosts=["nc-d87e1263-head", "nc-d87e1263-worker1"], peak_busbw_gbps=325.72,
             peak_busbw_size_bytes=8589934592, avg_busbw_gbps=122.073, wrong_total=0, complete=True),
        dict(ranks=16, hosts=["nccl-test-host-1", "nccl-test-host-2"], nccl_version="2.26.6",
             peak_busbw_gbps=325.52, peak_busbw_size_bytes=8589934592, avg_busbw_gbps=121.902, complete=True),
    ],
    "perf-eks-efa-t4-2node-tag-output.txt": [dict(
        ranks=2, hosts=["test-nccl-efa-worker-0", "test-nccl-efa-worker-1"], nccl_version="2.12.7",
        peak_busbw_gbps=3.15, peak_busbw_size_bytes=268435456, largest_size_bytes=1073741824,
        largest_size_busbw_gbps=3.11, avg_busbw_gbps=1.15327, complete=True)],
    "perf-sheffield-bessemer-v100-old-error-layout.txt": [
        dict(collective="all_reduce_perf", ranks=4, hosts=["bessemer-node026"], peak_busbw_gbps=10.52,
             peak_busbw_size_bytes=2097152, largest_size_busbw_gbps=9.40, avg_busbw_gbps=4.22207,
             wrong_total=None, data_checked=True, complete=True),
        dict(ranks=4, peak_busbw_gbps=11.18, peak_busbw_size_bytes=134217728, avg_busbw_gbps=4.42606,
             complete=True),
    ],
    "perf-aws-efa-v100-16rank-2node-old-layout.txt": [dict(
        ranks=16, hosts=["ip-172-31-41-105", "ip-172-31-41-36"], nccl_version="2.4.8",
        peak_busbw_gbps=8.82, peak_busbw_size_bytes=1073741824, avg_busbw_gbps=2.80613, complete=True)],
    "perf-superbench-a100-8gpu-allgather-na.txt": [dict(
        ranks=8, hosts=["localhost"], peak_busbw_gbps=223.39, peak_busbw_size_bytes=8589934592,
        avg_busbw_gbps=58.2651, wrong_total=None, data_checked=False, complete=True)],
    "perf-superbench-a100-8gpu-alltoall-na.txt": [dict(
        ranks=8, peak_busbw_gbps=224.31, avg_busbw_gbps=58.6481, data_checked=False, complete=True)],
    "perf-superbench-a100-8gpu-broadcast-na.txt": [dict(
        ranks=8, peak_busbw_gbps=232.81, avg_busbw_gbps=64.8653, data_checked=False, complete=True)],
    "perf-rdma-inc-2node-wrong-counts-g-format.txt": [dict(
        ranks=2, hosts=["worker1", "worker2"], peak_busbw_gbps=7.50, peak_busbw_size_bytes=67108864,
        largest_size_busbw_gbps=7.41, wrong_total=1073741424, out_of_bounds={"count": 108, "ok": False},
        avg_busbw_gbps=3.02663, complete=True)],
    "perf-li-plus-sendrecv-8gpu-inplace-na.txt": [dict(
        collective="sendrecv_perf", ranks=None, hosts=[], peak_busbw_gbps=195.10, wrong_total=0,
        data_checked=True, complete=False)],
    "perf-nccl-tests-issue264-cuda-failure-before-devices.txt": [dict(
        collective="all_reduce_perf", ranks=None, rows=[], complete=False)],
    "perf-nccl-tests-issue355-alltoall-2node-cuda-failure.txt": [dict(
        collective="alltoall_perf", nccl_tests_version="2.17.6", nccl_version="2.28.7", ranks=16,
        hosts=["node0", "node1"], rows=[], complete=False)],
    "perf-a3mega-h100-16rank-2node.txt": [dict(
        collective="all_reduce_perf", nccl_tests_version=None, nccl_version=None, ranks=16,
        hosts=["ztan-mig-235z", "ztan-mig-gq73"], peak_busbw_gbps=338.82, peak_busbw_size_bytes=8589934592,
        largest_size_bytes=8589934592, largest_size_busbw_gbps=338.82, avg_busbw_gbps=70.742, wrong_total=0,
        complete=True,
        args=["/opt/src/nccl-tests/build/all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "1"])],
    "perf-eks-efa-a10g-1rank-cut.txt": [dict(
        collective=None, nccl_version="2.22.3", ranks=1, hosts=["test-nccl-worker-0"], peak_busbw_gbps=0.0,
        largest_size_bytes=2147483648, avg_busbw_gbps=None, wrong_total=0, complete=False, errors=[])],
    "perf-h200-4gpu-failed-then-passed-two-runs.txt": [
        dict(nccl_version="2.18.3", ranks=4, rows=[], complete=False),
        dict(nccl_version="2.31.2", ranks=4, peak_busbw_gbps=356.04, peak_busbw_size_bytes=1073741824,
             largest_size_bytes=1074790400, largest_size_busbw_gbps=353.35, errors=[], complete=False),
    ],
}


def runs_of(name):
    return parse_file(str(SAMPLES / name))


def test_every_added_sample_has_expectations():
    # perf-* are this parser's samples; other files serve other tests (log-* the log diagnosis).
    added = {path.name for path in SAMPLES.glob("perf-*")}
    assert added <= set(EXPECTED)
    assert all((SAMPLES / name).is_file() for name in EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sample_reads_as_expected(name):
    runs = runs_of(name)
    assert len(runs) == len(EXPECTED[name])
    for run, expected in zip(runs, EXPECTED[name], strict=True):
        assert set(run) == RUN_KEYS
        for key, value in expected.items():
            assert run[key] == (pytest.approx(value) if isinstance(value, float) else value), key
        # Facts go through JSON: no NaN or infinity may slip through.
        json.dumps(run, allow_nan=False)


@pytest.mark.parametrize("name", sorted(path.name for path in SAMPLES.iterdir()))
def test_any_sample_parses_or_raises_only_the_parse_error(name):
    try:
        runs = runs_of(name)
    except NcclTestsParseError as error:
        assert "nccl-tests" in str(error)
    else:
        assert runs and all(set(run) == RUN_KEYS for run in runs)


def test_failure_lines_are_collected_and_the_cause_kept():
    run, = runs_of("h200-2host-bad-socket-ifname.txt")
    assert run["errors"][0].startswith("node0: Test NCCL failure common.cu:1550 'invalid usage")
    assert any("Test failure common.cu:1454" in line for line in run["errors"])
    assert any("no socket interface found" in line for line in run["warnings"])
    run, = runs_of("06c-nccl-tests-issue287-2gpu-nccl-debug-info-failure.txt")
    assert "Test NCCL failure common.cu:392" in run["errors"][0]
    assert any("Cuda failure 1 'invalid argument'" in line for line in run["warnings"])


def test_a_row_cut_by_a_failure_is_no_row_but_an_error():
    run, = runs_of("perf-nccl-tests-issue355-alltoall-2node-cuda-failure.txt")
    assert run["rows"] == []
    assert "an illegal memory access was encountered" in run["errors"][0]
    assert len(run["errors"]) == 7


def test_a_failed_run_does_not_leak_its_errors_into_the_next():
    failed, passed = runs_of("perf-h200-4gpu-failed-then-passed-two-runs.txt")
    assert len(failed["errors"]) == 7 and "illegal memory access" in failed["errors"][0]
    assert passed["errors"] == [] and len(passed["rows"]) == 2
    assert passed["args"] == ["./build/all_reduce_perf", "--minbytes", "1G", "--maxbytes", "2G",
                              "-g4", "-n40", "-c1", "-w10"]


def test_device_lines_of_both_formats():
    run, = runs_of("h200-2host-socket-defaults.txt")
    assert run["devices"][1] == {"rank": 1, "group": 0, "pid": 1496, "host": "node1", "device": 0,
                                 "bus_id": "0000:00:06", "name": "NVIDIA H200"}
    run = runs_of("perf-sheffield-bessemer-v100-old-error-layout.txt")[0]
    assert run["devices"][3] == {"rank": 3, "group": None, "pid": 201685, "host": "bessemer-node026",
                                 "device": 3, "bus_id": "0x40", "name": "Tesla V100-PCIE-32GB"}
    run, = runs_of("perf-eks-efa-t4-2node-tag-output.txt")
    assert [device["bus_id"] for device in run["devices"]] == ["0x35", "0xf5"]


def test_rows_of_the_2_13_layout():
    run, = runs_of("h200-2host-socket-defaults.txt")
    assert run["rows"][2] == {
        "size_bytes": 67108864, "count": 16777216, "type": "float", "redop": "sum", "root": -1,
        "out_of_place": {"time_us": 20371.4, "algbw_gbps": 3.29, "busbw_gbps": 3.29, "wrong": 0, "error": None},
        "in_place": {"time_us": 19049.3, "algbw_gbps": 3.52, "busbw_gbps": 3.52, "wrong": 0, "error": None},
    }


def test_numbers_in_g_form_and_wider_than_their_column():
    run, = runs_of("h200-1gpu-all_reduce_perf.txt")
    assert run["rows"][-1]["in_place"]["algbw_gbps"] == 1e6
    assert run["rows"][-3]["in_place"]["algbw_gbps"] == 36508
    run, = runs_of("06a-nccl-tests-issue287-1gpu-busbw0.txt")
    assert run["rows"][-1]["in_place"]["algbw_gbps"] == 1777718.25
    run, = runs_of("perf-rdma-inc-2node-wrong-counts-g-format.txt")
    by_size = {row["size_bytes"]: row for row in run["rows"]}
    assert by_size[2097152]["out_of_place"]["wrong"] == 1048580
    assert by_size[536870912]["in_place"]["wrong"] == 268435000


def test_old_layouts_with_an_error_column_and_without_redop_or_root():
    run = runs_of("perf-sheffield-bessemer-v100-old-error-layout.txt")[0]
    first = run["rows"][0]
    assert (first["redop"], first["root"]) == ("sum", None)
    assert first["out_of_place"]["error"] == 1e-07 and first["out_of_place"]["wrong"] is None
    assert run["config"] == {"nthreads": 1, "ngpus": 4, "min_bytes": 8, "max_bytes": 134217728,
                             "step_factor": 2, "warmup_iters": 5, "iters": 20, "validation": 1}
    assert run["args"] == ["./build/all_reduce_perf", "-b", "8", "-e", "128M", "-f", "2", "-g", "4"]
    gather, = runs_of("perf-superbench-a100-8gpu-allgather-na.txt")
    assert {(row["redop"], row["root"]) for row in gather["rows"]} == {(None, None)}
    assert gather["rows"][-1]["out_of_place"] == {"time_us": 33646, "algbw_gbps": 255.31, "busbw_gbps": 223.39,
                                                  "error": None, "wrong": None}
    broadcast, = runs_of("perf-superbench-a100-8gpu-broadcast-na.txt")
    assert {(row["redop"], row["root"]) for row in broadcast["rows"]} == {(None, 0)}


def test_an_empty_redop_value_does_not_shift_the_columns():
    # Old alltoall_perf has a redop header but prints an empty string under it.
    run, = runs_of("perf-superbench-a100-8gpu-alltoall-na.txt")
    assert len(run["rows"]) == 34
    assert run["rows"][5]["out_of_place"]["time_us"] == 89.0
    assert {row["redop"] for row in run["rows"]} == {None}


def test_in_place_not_checked_while_out_of_place_is():
    run, = runs_of("perf-li-plus-sendrecv-8gpu-inplace-na.txt")
    assert {row["in_place"]["wrong"] for row in run["rows"]} == {None}
    assert {row["out_of_place"]["wrong"] for row in run["rows"]} == {0}


def test_mpirun_tag_output_and_ray_prefixes():
    run, = runs_of("04-nccl-ebpf-2rank-1gpu-hostid-socket-nccltests2.18.txt")
    assert len(run["rows"]) == 8 and run["config"]["iters"] == 50
    sky, raw = runs_of("perf-skypilot-gke-h200-2node-allgather.txt")
    assert len(sky["rows"]) == len(raw["rows"]) == 24
    assert sky["rows"][0]["redop"] == "none"


def test_json_output_keeps_only_allowed_environment():
    run, = runs_of("h200-1gpu-all_reduce_perf.json")
    assert run["env"] == {"NCCL_DEBUG": "WARN", "CUDA_HOME": "/usr/local/cuda"}
    dumped = json.dumps(run)
    assert "AWS_SECRET_ACCESS_KEY" not in dumped and "planted-secret" not in dumped
    assert run["args"][-2:] == ["-J", "/tmp/single.json"]
    assert run["config"]["iters"] == 20 and run["config"]["blocking_collectives"] is False
    assert {row["root"] for row in run["rows"]} == {-1}


def test_json_and_text_of_the_same_run_agree():
    text, = runs_of("h200-1gpu-all_reduce_perf.txt")
    as_json, = runs_of("h200-1gpu-all_reduce_perf.json")
    assert [row["size_bytes"] for row in text["rows"]] == [row["size_bytes"] for row in as_json["rows"]]
    for text_row, json_row in zip(text["rows"], as_json["rows"], strict=True):
        assert text_row["out_of_place"]["time_us"] == pytest.approx(json_row["out_of_place"]["time_us"], abs=0.01)
        assert text_row["out_of_place"]["wrong"] == json_row["out_of_place"]["wrong"] == 0
    assert text["devices"] == as_json["devices"]


def test_bytes_and_str_give_the_same_runs():
    data = (SAMPLES / "h200-2host-socket-defaults.txt").read_bytes()
    assert parse(data) == parse(data.decode()) == runs_of("h200-2host-socket-defaults.txt")
