"""Long nccl-tests outputs: a file is read a chunk at a time with the results of reading it whole,
the rows kept whole are bounded while every figure and gate still reads every row, and a parse
of hundreds of thousands of rows stays within a fixed memory bound."""

import json
import subprocess
import sys
import textwrap

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests import output as nccl_tests_output
from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests import rows as nccl_tests_rows
from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests.output import (
    NcclTestsParseError,
    parse,
    parse_file,
    summarize,
)
from conftest import REPO_ROOT, SAMPLES

TEXT_SAMPLES = sorted(path.name for path in SAMPLES.iterdir()
                      if path.suffix in (".txt", ".log") and path.name.startswith(("perf-", "h200-")))
GATES = [dict(), dict(min_busbw_gbps=1.0), dict(min_busbw_gbps=3.0, gate_min_size_bytes=1024),
         dict(min_busbw_gbps=0.5, gate_min_size_bytes=1 << 40), dict(max_wrong=None, require_complete=False)]


def outcome(read):
    """The runs (as JSON) or the error message a reader gives."""
    try:
        return json.dumps(read(), sort_keys=True)
    except NcclTestsParseError as error:
        return "error: " + str(error)


@pytest.mark.parametrize("chunk", [1, 7, 4096])
@pytest.mark.parametrize("name", TEXT_SAMPLES)
def test_a_file_read_in_chunks_reads_as_the_same_text_in_memory(monkeypatch, name, chunk):
    monkeypatch.setattr(nccl_tests_output, "_CHUNK", chunk)
    path = str(SAMPLES / name)
    data = (SAMPLES / name).read_bytes()
    assert outcome(lambda: parse_file(path)) == outcome(lambda: parse(data))


@pytest.mark.parametrize("data", [
    "\ufeff# nThread 1\r\n#  Rank  0 Group  0 Pid 1 on h device  0 [0000:01:00] G\r\n\r\n",  # BOM, CRLF
    "x\r" * 40 + "# nThread 1 nGpus 1\n",                                             # bare CRs across chunks
    "   \n\t\n" + " " * 50,                                                            # blank only
    "é" * 30 + "\n# nThread 1\n",                                                      # UTF-8 across chunks
])
def test_chunk_boundaries_never_change_the_lines(monkeypatch, tmp_path, data):
    monkeypatch.setattr(nccl_tests_output, "_CHUNK", 5)
    sample = (SAMPLES / "h200-2host-socket-defaults.txt").read_text().split("\n", 1)[1]
    for text in (data, data + sample, sample.replace("\n", "\r\n") + data):
        path = tmp_path / "out.txt"
        path.write_bytes(text.encode("utf-8"))
        assert outcome(lambda path=path: parse_file(str(path))) == outcome(lambda text=text: parse(text))


@pytest.mark.parametrize("bad, message", [
    (b"\x00", r"binary \(a NUL byte at offset 2001\)"),
    (b"\xff", r"not UTF-8 text \(byte 0xff at offset 2001\)"),
])
def test_bad_bytes_far_into_a_file_are_named_at_their_offset(monkeypatch, tmp_path, bad, message):
    monkeypatch.setattr(nccl_tests_output, "_CHUNK", 64)
    path = tmp_path / "out.txt"
    path.write_bytes(b"# nThread 1\n" * 166 + b"x" * 9 + bad + b"\n")  # 166 * 12 + 9 = 2001
    with pytest.raises(NcclTestsParseError, match=message):
        parse_file(str(path))


def test_a_file_growing_past_the_limit_while_read_is_refused(monkeypatch, tmp_path):
    monkeypatch.setattr(nccl_tests_output, "_CHUNK", 16)
    path = tmp_path / "out.txt"
    path.write_bytes(b"# nThread 1\n" * 10)

    real_read = nccl_tests_output.os.path.getsize
    monkeypatch.setattr(nccl_tests_output.os.path, "getsize", lambda p: 10 if p == str(path) else real_read(p))
    with pytest.raises(NcclTestsParseError, match="over the 100-byte limit"):
        parse_file(str(path), max_bytes=100)


@pytest.mark.parametrize("name", TEXT_SAMPLES + ["h200-1gpu-all_reduce_perf.json"])
def test_rows_beyond_the_bound_still_count_in_every_figure_and_gate(monkeypatch, name):
    unbounded = _parses(name)
    if not unbounded or not any(run["rows"] for run in unbounded):
        pytest.skip("no rows in this sample")
    monkeypatch.setattr(nccl_tests_rows, "MAX_KEPT_ROWS", 2)
    bounded = parse_file(str(SAMPLES / name))
    kept = [row for run in bounded for row in run["rows"]]
    assert kept == [row for run in unbounded for row in run["rows"]][:2]
    for cut, whole in zip(bounded, unbounded, strict=True):
        assert cut["row_count"] == whole["row_count"] == len(whole["rows"])
        assert {k: v for k, v in cut.items() if k != "rows"} == {k: v for k, v in whole.items() if k != "rows"}
    for gates in GATES:
        for index in range(len(unbounded)):
            cut, whole = (summarize(runs, run_index=index, **gates) for runs in (bounded, unbounded))
            assert (cut["gates"], cut["passed"], cut["runs"]) == (whole["gates"], whole["passed"], whole["runs"])


def _parses(name):
    try:
        return parse_file(str(SAMPLES / name))
    except NcclTestsParseError:
        return None


def test_the_bandwidth_gate_reads_rows_that_were_not_kept(monkeypatch):
    # The slowest row at the gated sizes comes after the rows kept whole: the gate still finds it.
    lines = (SAMPLES / "h200-2host-socket-defaults.txt").read_text().splitlines()[1:]
    rows = [i for i, line in enumerate(lines) if line.strip()[:1].isdigit()]
    slow = lines[rows[-1]].replace("2.99    2.99       0", "2.99    0.42       0")
    assert slow != lines[rows[-1]]
    text = "\n".join(lines[:rows[-1] + 1] + [slow] + lines[rows[-1] + 1:])
    monkeypatch.setattr(nccl_tests_rows, "MAX_KEPT_ROWS", 1)
    facts = summarize(parse(text), min_busbw_gbps=1.0)
    assert len(facts["rows"]) == 1 and facts["row_count"] == len(rows) + 1
    assert not facts["passed"]
    assert facts["gates"][-1]["message"] == "busbw 0.42 GB/s at 536870912 B is below min_busbw_gbps 1"


# The parse, gates and JSON facts the module returns, of a generated output of N rows (the file's
# name), in a process of its own that then reports its own peak RSS: that of this work alone. The
# peak is VmHWM, which starts afresh at exec; getrusage's ru_maxrss keeps the forking parent's
# size, so a child of a large pytest process would report pytest's memory.
_MEASURE = textwrap.dedent("""
    import json, re, sys
    from pathlib import Path
    path, benchmarks, collections = sys.argv[1:4]
    sys.path[:0] = [benchmarks, collections]
    from diagnose_speed import write_perf
    from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests.output import parse_file, summarize
    write_perf(Path(path), int(Path(path).stem))
    facts = summarize(parse_file(path, max_bytes=1 << 30), min_busbw_gbps=1.0)
    document = json.dumps({"ansible_facts": {"nccl_perf": facts}})
    with open("/proc/self/status") as status:
        peak_kib = re.search(r"^VmHWM:\\s+(\\d+) kB", status.read(), re.M).group(1)
    print(facts["passed"], len(document), peak_kib)
""")


def test_a_long_output_is_read_within_a_fixed_memory_bound(tmp_path):
    # 200000 rows (24 MB of text) took 270 MiB when every row was kept as dicts, 36 MiB since: the
    # text is read a chunk at a time, rows beyond the bound cost 16 bytes each, the facts are cut.
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(tmp_path / "200000.txt"), str(REPO_ROOT / "benchmarks"),
         str(REPO_ROOT / "collections")],
        capture_output=True, text=True, check=True, timeout=300)
    passed, facts_bytes, peak_kib = done.stdout.split()
    assert passed == "True"
    assert int(peak_kib) / 1024 < 80, f"peak RSS {int(peak_kib) / 1024:.0f} MiB for 200000 rows"
    assert int(facts_bytes) < 10 * 1024 * 1024
