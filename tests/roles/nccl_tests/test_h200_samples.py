"""The H200 run's outputs kept as samples (tests/samples/h200-nccl_tests-*): the build the role made
there loaded the NCCL it was built against (PyTorch's), for sm_90 only, with MPI; the benchmark
met the issue's target."""

import json
import re
from pathlib import Path

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def test_all_reduce_ran_with_the_nccl_of_the_stamp():
    stamp = json.loads((SAMPLES / "h200-nccl_tests-role-stamp.json").read_text())
    out = (SAMPLES / "h200-nccl_tests-role-all_reduce_perf.txt").read_text()
    major, minor, patch = (int(x) for x in stamp["nccl_version"].split("."))
    code = major * 10000 + minor * 100 + patch
    assert f"# nccl-tests version 2.19.6 nccl-headers={code} nccl-library={code}" in out
    assert stamp["nccl_tests_version"] == "v2.19.6"
    assert stamp["nccl_library"].endswith("/site-packages/nvidia/nccl/lib/libnccl.so.2")
    assert stamp["gencode"] == "-gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_90,code=compute_90"
    assert stamp["mpi"] is True
    assert "NVIDIA H200" in out and "# Out of bounds values : 0 OK" in out
    rows = [line.split() for line in out.splitlines() if re.match(r"^\s+\d+\s+\d+\s+float", line)]
    assert [int(r[0]) for r in rows] == [8 * 4 ** i for i in range(14)]  # -b 8 -e 1G -f 4
    assert all(r[8] == "0" and r[12] == "0" for r in rows)  # no wrong results


def test_benchmark_met_the_target():
    bench = (SAMPLES / "h200-nccl_tests-build-bench.txt").read_text()
    ratio = float(re.search(r"ratio role/upstream: ([0-9.]+)", bench).group(1))
    assert ratio <= 0.3
    assert "second run compiled nothing" in bench
    assert re.search(r"role second run: rc=0, .* changed=0 .* failed=0", bench)
