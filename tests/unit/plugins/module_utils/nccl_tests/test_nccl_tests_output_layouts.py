"""The nccl-tests parser on synthetic variants of each layout, prefix and failure."""

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests.output import (
    collective_name,
    evaluate_gates,
    nccl_version_from_code,
    parse,
)
from conftest import SAMPLES

HEADER_2_13 = """\
#                                                              out-of-place                       in-place          
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong 
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         
"""


def row_2_13(size, busbw, wrong="0", type_name="float", time=10.0):
    half = f"  {time:7.2f}  {busbw:6.2f}  {busbw:6.2f}  {wrong:>6s}"
    return "{:12d}  {:12d}  {:>8s}  {:>6s}  {:6d}".format(size, size // 4, type_name, "sum", -1) + half + half


def modern_run(rows, program="all_reduce_perf", hosts=("node0", "node1"), footer=True, avg="1.5"):
    """A 2.19-style run; rows are (size, busbw, wrong) with wrong as printed."""
    lines = ["# nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809",
             "# Collective test starting: " + program,
             "# nThread 1 nGpus 1 minBytes 8 maxBytes 1024 step: 2(factor) warmup iters: 1 iters: 20 "
             "agg iters: 1 validation: 1 graph: 0 unalign: 0",
             "#", "# Using devices"]
    lines += [f"#  Rank {rank:2d} Group  0 Pid {1000 + rank:6d} on {host:>10s} device  0 [0000:00:06] NVIDIA H200" for rank, host in enumerate(hosts)]
    lines += ["#"] + HEADER_2_13.splitlines()
    lines += [row_2_13(*row) for row in rows]
    if footer:
        lines += ["# Out of bounds values : 0 OK", f"# Avg bus bandwidth    : {avg} ", "#",
                  "# Collective test concluded: " + program, "#"]
    return "\n".join(lines) + "\n"


ROWS = [(1024, 0.5, "0"), (1048576, 2.5, "0"), (1073741824, 3.0, "0")]

V2_0_ALL_GATHER = """\
# nThread 1 nGpus 2 minBytes 8 maxBytes 1024 step: 2(factor) warmup iters: 5 iters: 20 validation: 1 
#
# Using devices
#   Rank  0 Pid  12345 on     host-a device  0 [0x0f] Tesla P100-SXM2-16GB
#   Rank  1 Pid  12345 on     host-a device  1 [0x10] Tesla P100-SXM2-16GB
#
#                                             out-of-place                       in-place
#       size         count    type     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)             (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             1   float    12.34    0.00    0.00  0e+00    12.10    0.00    0.00  0e+00
        1024           128   float    13.00    0.08    0.04  2e-07    12.90    0.08    0.04  2e-07
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 0.02 
#
"""


def only(text):
    runs = parse(text)
    assert len(runs) == 1, runs
    return runs[0]


def test_the_2_0_layout_without_redop_group_or_root():
    run = only(V2_0_ALL_GATHER)
    assert run["ranks"] == 2 and run["hosts"] == ["host-a"]
    assert [device["bus_id"] for device in run["devices"]] == ["0x0f", "0x10"]
    assert run["devices"][0]["group"] is None
    last = run["rows"][-1]
    assert (last["type"], last["redop"], last["root"]) == ("float", None, None)
    assert last["out_of_place"] == {"time_us": 13.0, "algbw_gbps": 0.08, "busbw_gbps": 0.04,
                                    "error": 2e-07, "wrong": None}
    assert run["wrong_total"] is None and run["data_checked"] is True and run["complete"]
    gate = evaluate_gates(run)["gates"][1]
    assert (gate["name"], gate["measured"], gate["passed"]) == ("max_wrong", 0, True)


def test_unchecked_runs_have_null_wrong_counts():
    run = only(modern_run([(size, busbw, "N/A") for size, busbw, dummy in ROWS]))
    assert {row["out_of_place"]["wrong"] for row in run["rows"]} == {None}
    assert run["wrong_total"] is None and run["data_checked"] is False
    gate = [gate for gate in evaluate_gates(run)["gates"] if gate["name"] == "max_wrong"][0]
    assert gate["passed"] and gate["measured"] is None and "-c 0" in gate["message"]


def test_wrong_counts_in_g_form():
    run = only(modern_run([(2097152, 6.73, "1.04858e+06"), (4194304, 6.78, "2.09715e+06")]))
    assert [row["in_place"]["wrong"] for row in run["rows"]] == [1048580, 2097150]
    assert run["wrong_total"] == 2 * (1048580 + 2097150)


def test_noise_anywhere_even_between_rows():
    clean = only(modern_run(ROWS))
    lines = modern_run(ROWS).splitlines()
    header_end = lines.index(HEADER_2_13.splitlines()[-1]) + 1
    noise = ["node0:1000:1000 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0",
             "", "node1:1001:1001 [0] NCCL INFO NET/Socket : Using [0]eth1:10.0.0.2<0>",
             "--------------------------------------------------------------------------",
             "WARNING: There was an error initializing an OpenFabrics device.",
             "  Local host:   node0",
             "node0:1000:1010 [0] misc/socket.cc:50 NCCL WARN Net : Connection closed by remote peer"]
    noisy = lines[:header_end] + noise[:3] + [lines[header_end]] + noise[3:] + lines[header_end + 1:]
    run = only("\n".join(noise + noisy))
    assert run["rows"] == clean["rows"] and run["complete"] and run["errors"] == []
    assert run["warnings"] == [noise[-1]]


def test_several_runs_in_one_file():
    text = modern_run(ROWS) + "$ ./build/all_gather_perf -b 8 -e 1G -g 1\n" + modern_run(
        [(1024, 0.4, "0"), (2048, 0.9, "0")], program="all_gather_perf", avg="0.6")
    first, second = parse(text)
    assert (first["collective"], second["collective"]) == ("all_reduce_perf", "all_gather_perf")
    assert (len(first["rows"]), len(second["rows"])) == (3, 2)
    assert (first["avg_busbw_gbps"], second["avg_busbw_gbps"]) == (1.5, 0.6)
    assert first["args"] is None and second["args"] == ["./build/all_gather_perf", "-b", "8", "-e", "1G", "-g", "1"]
    assert first["complete"] and second["complete"]


def test_concatenated_real_samples_read_as_their_runs():
    names = ["h200-2host-socket-defaults.txt", "perf-sheffield-bessemer-v100-old-error-layout.txt",
             "h200-2host-bad-socket-ifname.txt", "perf-eks-efa-t4-2node-tag-output.txt"]
    runs = parse("".join((SAMPLES / name).read_text() for name in names))
    assert [run["ranks"] for run in runs] == [2, 4, 4, 2, 2]
    assert [run["complete"] for run in runs] == [True, True, True, False, True]


def test_output_cut_mid_table_is_incomplete():
    text = modern_run(ROWS)
    cut = text[:text.index(row_2_13(*ROWS[1])) + 20]  # mid-way through the second row
    run = only(cut)
    assert len(run["rows"]) == 1 and not run["complete"] and run["errors"] == []
    gate = evaluate_gates(run)["gates"][0]
    assert not gate["passed"] and "no 'Avg bus bandwidth' footer" in gate["message"]


def test_per_iteration_and_timestamp_columns():
    header = (
        "#                                                   out-of-place (+ per-iteration)                                in-place (+ per-iteration)\n"
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%            timestamp\n"  # noqa: E501
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)     (us)     (us)      (%)     (us)  (GB/s)  (GB/s)             (us)     (us)     (us)      (%)    %Y-%m-%d %H:%M:%S\n")  # noqa: E501
    row = ("     1048576        262144     float     sum      -1   471.84    2.22    2.22       0   460.10   490.00   489.50     1.20"
           "   476.83    2.20    2.20       0   470.00   480.00   479.90     0.80  2026-12-02 09:04:19\n")
    run = only("# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1048576 step: 2(factor) warmup iters: 1 iters: 10\n"
               + header + row + "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 2.21 \n")
    half = run["rows"][0]["out_of_place"]
    assert half == {"time_us": 471.84, "algbw_gbps": 2.22, "busbw_gbps": 2.22, "wrong": 0, "iter_min_us": 460.1,
                    "iter_max_us": 490.0, "iter_p99_us": 489.5, "iter_cv_pct": 1.2, "error": None}
    assert run["rows"][0]["in_place"]["iter_cv_pct"] == 0.8 and run["complete"]


def test_cputime_column():
    text = modern_run(ROWS).replace("root     time   algbw   busbw  #wrong     time",
                                    "root  cputime   algbw   busbw  #wrong  cputime")
    assert [row["out_of_place"]["time_us"] for row in only(text)["rows"]] == [10.0, 10.0, 10.0]


PREFIXES = {
    "mpirun --tag-output": lambda n: "[1,0]<stdout>:",
    "mpirun --timestamp-output --tag-output": lambda n: f"Mon Dec  2 10:57:{n % 60:02d} 2026[1,0]<stdout>:",
    "mpirun --timestamp-output": lambda n: f"Mon Dec  2 10:57:{n % 60:02d} 2026<stdout>:",
    "prrte tag-detailed": lambda n: "[prterun-node0-1234@1,0][node0:1234]<stdout>: ",
    "prrte timestamp": lambda n: f"[2026-12-02 10:57:{n % 60:02d}]<stdout>: ",
    "srun --label": lambda n: "0: ",
    "kubectl logs --timestamps": lambda n: f"2026-12-02T10:57:{n % 60:02d}.123456789Z ",
    "pdsh": lambda n: "node0: ",
    "ray with colours": lambda n: "\x1b[36m(head, rank=0, pid=3808)\x1b[0m ",
}


@pytest.mark.parametrize("launcher", sorted(PREFIXES))
def test_launcher_prefixes(launcher):
    text = (SAMPLES / "h200-2host-socket-nccl-debug-info.txt").read_text()
    plain = only(text)
    prefixed = "\n".join(PREFIXES[launcher](n) + line for n, line in enumerate(text.splitlines()))
    run = only(prefixed)
    for key in ("rows", "devices", "nccl_version", "peak_busbw_gbps", "avg_busbw_gbps", "complete", "config"):
        assert run[key] == plain[key], key


def test_crlf_line_ends_and_a_byte_order_mark():
    text = (SAMPLES / "h200-2host-socket-defaults.txt").read_text()
    windows = b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode()
    assert parse(windows) == parse(text)


def test_cycles_and_types_repeat_sizes():
    run = only(modern_run([(1024, 1.0, "0"), (2048, 2.0, "0"), (1024, 1.5, "0"), (2048, 1.8, "0")]))
    assert run["peak_busbw_gbps"] == 2.0 and run["peak_busbw_size_bytes"] == 2048
    assert run["largest_size_busbw_gbps"] == 1.8  # the lower of the two cycles
    several_types = only(modern_run([(1024, 1.0, "0")]).replace(
        "# Out of bounds", row_2_13(1024, 0.9, "0", "bfloat16") + "\n# Out of bounds"))
    assert [row["type"] for row in several_types["rows"]] == ["float", "bfloat16"]
    assert several_types["largest_size_busbw_gbps"] == 0.9


def test_rows_with_only_an_in_place_half():
    # Trace replay prints a blank out-of-place body.
    row = "{:12d}  {:12d}  {:>8s}  {:>6s}  {:6d}".format(1024, 256, "float", "sum", -1) + " " * 32 \
        + "  {0:7.2f}  {1:6.2f}  {1:6.2f}  {2:>6s}".format(5.0, 0.2, "0")
    run = only(modern_run([]).replace("# Out of bounds", row + "\n# Out of bounds"))
    assert run["rows"][0]["out_of_place"] is None
    assert run["rows"][0]["in_place"]["busbw_gbps"] == 0.2
    assert run["peak_busbw_gbps"] is None


def test_ranks_of_an_nccl_tests_built_without_mpi_each_print_a_run():
    one = modern_run(ROWS, hosts=("node0",)).splitlines()
    two = modern_run(ROWS, hosts=("node1",)).splitlines()
    interleaved = [tag + line for pair in zip(one, two, strict=True)
                   for tag, line in zip(("[1,0]<stdout>:", "[1,1]<stdout>:"), pair, strict=True)]
    runs = parse("\n".join(interleaved))
    assert [run["ranks"] for run in runs] == [1, 1]
    assert [run["hosts"] for run in runs] == [["node0"], ["node1"]]
    assert all("built without MPI=1" in run["warnings"][-1] for run in runs)


def test_a_failure_of_another_rank_fails_the_run():
    tagged = ["[1,0]<stdout>:" + line for line in modern_run(ROWS).splitlines()]
    tagged.insert(12, "[1,1]<stderr>:node1: Test NCCL failure common.cu:1000 'remote process exited or there was a network error'")
    tagged.append("mpirun detected that one or more processes exited with non-zero status, thus causing")
    run = only("\n".join(tagged))
    assert not run["complete"] and len(run["rows"]) == 3
    assert run["errors"] == [tagged[12].split(":", 1)[1], tagged[-1]]


def test_nccl_tests_own_failed_verdicts():
    text = modern_run(ROWS).replace("Out of bounds values : 0 OK", "Out of bounds values : 3 FAILED") \
        .replace("Avg bus bandwidth    : 1.5 ", "Avg bus bandwidth    : 1.5 FAILED")
    run = only(text)
    assert run["out_of_bounds"] == {"count": 3, "ok": False} and run["avg_busbw_ok"] is False
    gate = evaluate_gates(run)["gates"][-1]
    assert gate["name"] == "avg_busbw_check" and not gate["passed"]


def test_error_line_after_the_footer():
    run = only(modern_run(ROWS) + "# error: remote process exited or there was a network error\n")
    assert run["errors"] == ["# error: remote process exited or there was a network error"]
    assert not run["complete"]


def test_a_job_failure_after_the_last_run_marks_it():
    text = modern_run(ROWS) + ("-------\nPrimary job  terminated normally, but 1 process returned\n"
                               "a non-zero exit code. Per user-direction, the job has been aborted.\n")
    run = only(text)
    assert not run["complete"] and len(run["errors"]) == 2


def test_nan_and_inf_values_become_null():
    text = modern_run(ROWS).replace("    3.00    3.00       0", "    -nan     inf       0", 1)
    run = only(text)
    assert run["rows"][2]["out_of_place"]["algbw_gbps"] is None
    assert run["rows"][2]["out_of_place"]["busbw_gbps"] is None
    assert run["peak_busbw_gbps"] == 2.5 and run["largest_size_bytes"] == 1048576


def test_nccl_version_from_log_lines():
    assert only(V2_0_ALL_GATHER.replace("#\n#  ", "NCCL version 2.4.8+cuda10.0\n#\n#  ", 1))["nccl_version"] == "2.4.8"
    info = "host-a:1:1 [0] NCCL INFO NCCL version 2.7.8+cuda11.0\n"
    assert only(info + V2_0_ALL_GATHER)["nccl_version"] == "2.7.8"


@pytest.mark.parametrize("code, version", [(22809, "2.28.9"), (21803, "2.18.3"), (2808, "2.8.8"),
                                           (2406, "2.4.6"), (0, None), (None, None)])
def test_nccl_version_codes(code, version):
    assert nccl_version_from_code(code) == version


def test_collective_names():
    assert collective_name("./build/all_reduce_perf_mpi") == "all_reduce_perf"
    assert collective_name("sendrecv_perf") == "sendrecv_perf"
    assert collective_name(None) is None


def test_absurdly_long_numbers_are_no_counts():
    digits = "9" * 5000
    text = modern_run(ROWS).replace("Out of bounds values : 0 OK", f"Out of bounds values : {digits} OK")
    text = text.replace("nccl-library=22809", "nccl-library=" + digits)
    huge_row = row_2_13(1, 1.0).replace("           1", digits, 1)
    run = only(text.replace("# Out of bounds", huge_row + "\n# Out of bounds"))
    assert len(run["rows"]) == 3 and run["out_of_bounds"] == {"count": None, "ok": None}
    assert run["nccl_version"] is None and run["complete"]


def test_ranks_loading_different_nccl_versions_are_flagged():
    text = V2_0_ALL_GATHER.replace("#\n#  ", "host-a:1:1 [0] NCCL INFO NCCL version 2.18.3+cuda12.2\n"
                                   "host-b:2:2 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n#\n#  ", 1)
    run = only(text)
    assert run["nccl_version"] == "2.18.3"
    assert "different NCCL versions (2.18.3, 2.21.5)" in run["warnings"][-1]
