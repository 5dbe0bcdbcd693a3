"""The -J JSON output of nccl-tests, schema versions 1 to 3."""

import copy
import json

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests.output import parse
from conftest import SAMPLES

SAMPLE = json.loads((SAMPLES / "h200-1gpu-all_reduce_perf.json").read_text())


def run_of(document):
    runs = parse(json.dumps(document))
    assert len(runs) == 1
    return runs[0]


def changed(**top_level):
    document = copy.deepcopy(SAMPLE)
    document.update(top_level)
    return document


def test_the_sample():
    run = run_of(SAMPLE)
    assert run["source"] == "json" and run["json_version"] == 3
    assert run["rows"][0] == {
        "size_bytes": 8, "count": 2, "type": "float", "redop": "sum", "root": -1,
        "out_of_place": {"time_us": 6.94195, "algbw_gbps": 0.001152, "busbw_gbps": 0.0, "wrong": 0, "error": None},
        "in_place": {"time_us": 0.4264, "algbw_gbps": 0.018762, "busbw_gbps": 0.0, "wrong": 0, "error": None},
    }
    assert run["devices"] == [{"rank": 0, "group": 0, "pid": 2588, "host": "vm", "device": 0,
                               "bus_id": "0000:00:06", "name": "NVIDIA H200"}]
    assert run["start_time"] == "2026-12-02 09:04:19" and run["end_time"] == "2026-12-02 09:04:20"
    assert run["config"]["min_bytes"] == 8 and run["config"]["step_factor"] == 4


def test_version_1_spelled_the_footer_keys_wrong():
    document = copy.deepcopy(SAMPLE)
    document["version"] = 1
    document["average_bus_bandwidith"] = {"bandwidith": 12.5, "okay": "true"}
    del document["average_bus_bandwidth"]
    run = run_of(document)
    assert run["avg_busbw_gbps"] == 12.5 and run["avg_busbw_ok"] is True and run["complete"]


def test_nan_strings_and_unchecked_wrong_counts():
    document = copy.deepcopy(SAMPLE)
    document["results"][0]["out_of_place"].update(bus_bw="nan", alg_bw="nan", nwrong=None)
    run = run_of(document)
    assert run["rows"][0]["out_of_place"]["busbw_gbps"] is None
    assert run["rows"][0]["out_of_place"]["wrong"] is None
    json.dumps(run, allow_nan=False)


def test_a_run_killed_before_its_footer_is_incomplete():
    document = copy.deepcopy(SAMPLE)
    del document["average_bus_bandwidth"]
    del document["out_of_bounds"]
    run = run_of(document)
    assert not run["complete"] and run["avg_busbw_gbps"] is None
    assert run["out_of_bounds"] == {"count": None, "ok": None}


def test_errors_recorded_make_it_incomplete():
    run = run_of(changed(errors=["remote process exited or there was a network error"]))
    assert run["errors"] == ["remote process exited or there was a network error"] and not run["complete"]


def test_okay_strings():
    run = run_of(changed(average_bus_bandwidth={"bandwidth": 1.0, "okay": "false"},
                         out_of_bounds={"count": 2, "okay": "false"}))
    assert run["avg_busbw_ok"] is False and run["out_of_bounds"] == {"count": 2, "ok": False}


def test_per_iteration_blocks_and_cpu_time():
    document = copy.deepcopy(SAMPLE)
    result = document["results"][-1]
    result["in_place"]["cpu_time"] = result["in_place"].pop("time")
    result["out_of_place_per_iter"] = {"skipped_iterations": 0, "min_us": 250.0, "max_us": 270.5,
                                       "p99_us": 270.0, "cv_pct": 1.5, "times_us": [250.0, 270.5]}
    row = run_of(document)["rows"][-1]
    assert row["in_place"]["time_us"] == 0.47435
    assert (row["out_of_place"]["iter_min_us"], row["out_of_place"]["iter_cv_pct"]) == (250.0, 1.5)


def test_environment_allow_list():
    env = ["NCCL_SOCKET_IFNAME=eth1", "NCCL_IB_HCA=mlx5_0", "CUDA_VISIBLE_DEVICES=0,1", "NVIDIA_VISIBLE_DEVICES=all",
           "OMPI_MCA_btl_tcp_if_include=eth1", "OMPI_MCA_oob_tcp_if_include=eth1", "OMPI_MCA_plm_rsh_agent=ssh",
           "UCX_TLS=tcp", "FI_PROVIDER=efa", "TORCH_NCCL_ASYNC_ERROR_HANDLING=1", "HOME=/root",
           "PATH=/usr/bin", "AWS_SECRET_ACCESS_KEY=x", "NCCL_API_TOKEN=y", "HF_TOKEN=z", "not-an-entry", 7]
    run = run_of(changed(env=env))
    assert run["env"] == {
        "NCCL_SOCKET_IFNAME": "eth1", "NCCL_IB_HCA": "mlx5_0", "CUDA_VISIBLE_DEVICES": "0,1",
        "NVIDIA_VISIBLE_DEVICES": "all", "OMPI_MCA_btl_tcp_if_include": "eth1",
        "OMPI_MCA_oob_tcp_if_include": "eth1", "UCX_TLS": "tcp", "FI_PROVIDER": "efa",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
    }


@pytest.mark.parametrize("field, value", [
    ("results", [None, 1, "x", {"size": "big"}, {"size": True}]),
    ("config", "not a dict"), ("env", {"NCCL_DEBUG": "INFO"}), ("args", [1, None]),
    ("nccl_version", "2.28"), ("errors", "text"), ("out_of_bounds", [1]),
    ("average_bus_bandwidth", {"bandwidth": [1], "okay": 3}),
])
def test_odd_field_types_never_crash(field, value):
    run = run_of(changed(**{field: value}))
    json.dumps(run, allow_nan=False)
