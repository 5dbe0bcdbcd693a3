"""Properties of the diagnosis readers on arbitrary and mutated real inputs: no exception but each
reader's own error type, and the root-cause contract (the first finding is a cause; every
consequence_of names a finding that is listed; the verdict agrees with the severities)."""

import io
import pickle

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.flight_recorder import (
    FlightRecorderError,
    compare_dumps,
    read_dump,
)
from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.log import (
    NcclLogError,
    read_nccl_log,
    read_nccl_log_files,
)
from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.ras import (
    RasFormatError,
    RasText,
    parse_ras_json,
)
from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests.output import (
    NcclTestsParseError,
    evaluate_gates,
    parse,
)
from conftest import REPO_ROOT, SAMPLES

FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LOGS = [(SAMPLES / name).read_bytes() for name in (
    "h200-stuck-arp_kill.log", "h200-stuck-arp_stop.log", "h200-stuck-torch_kill-node1.log",
    "h200-stuck-torch_stop-node0.log", "h200-stuck-torch_stop-forensics.log", "log-gloo-33-enforce-fail-refused-"
    "address-in-use.txt", "log-chimera-2-childfailed-sigabrt.txt", "log-vista-22-lightning-stuck-initializing-"
    "distributed.txt", "nccl-ras-verbose-status-rank1-stopped.txt", "log-lkml-oom-killer.txt")]
RAS_JSON = (SAMPLES / "nccl-ras-json-status-rank1-stopped.json").read_text()
DUMP = (REPO_ROOT / "benchmarks" / "results" / "h200-torch-stop-flight-recorder-rank0.pkl").read_bytes()
# Characters str.splitlines() breaks on besides \n and \r; files are split on \n (and \r) only.
_OTHER_BREAKS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


@st.composite
def mutated(draw, samples):
    data = bytearray(draw(st.sampled_from(samples)))
    for dummy in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["cut", "flip", "drop_lines", "shuffle_lines", "splice"]))
        if kind == "cut" and data:
            start = draw(st.integers(0, len(data) - 1))
            data = data[:start] + data[start + draw(st.integers(0, 400)):]
        elif kind == "flip" and data:
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        elif kind in ("drop_lines", "shuffle_lines"):
            lines = bytes(data).split(b"\n")
            if kind == "drop_lines":
                lines = [line for line in lines if draw(st.booleans())]
            else:
                draw(st.randoms(use_true_random=False)).shuffle(lines)
            data = bytearray(b"\n".join(lines))
        elif kind == "splice":
            other = draw(st.sampled_from(samples))
            at = draw(st.integers(0, len(data)))
            data = data[:at] + other[:draw(st.integers(0, len(other)))] + data[at:]
    return bytes(data)


def contract(result):
    findings = result["findings"]
    listed = {f["code"] for f in findings}
    for finding in findings:
        assert finding["consequence_of"] is None or finding["consequence_of"] in listed, finding
        assert finding["severity"] in ("error", "warning", "info") and finding["host"]
    errors = [f for f in findings if f["severity"] == "error"]
    if errors:
        assert result["verdict"].startswith("PROBLEM: ") and findings[0]["severity"] == "error"
        assert findings[0]["consequence_of"] is None
    elif result["judged"]:
        assert result["verdict"].startswith("HEALTHY: ")
    else:  # nothing recognisable is never healthy
        assert result["verdict"].startswith("NOTHING TO JUDGE: ") and not findings


@FAST
@given(mutated(LOGS))
def test_mutated_real_logs_keep_the_root_cause_contract(data):
    try:
        result = read_nccl_log(data)
    except NcclLogError:
        return
    contract(result)


@FAST
@given(mutated(LOGS))
def test_a_file_read_in_chunks_means_what_the_same_text_in_memory_means(data):
    text = data.decode("utf-8", "replace")
    if any(ch in text for ch in _OTHER_BREAKS) or not text.strip():
        return
    try:
        in_memory = read_nccl_log(data)
    except NcclLogError:
        return
    streamed = read_nccl_log_files([io.BytesIO(data)])
    strip = ("source",)
    assert [{k: v for k, v in f.items() if k not in strip} for f in streamed["findings"]] == \
        [{k: v for k, v in f.items() if k not in strip} for f in in_memory["findings"]]
    assert streamed["lines"] == in_memory["lines"]


@FAST
@given(st.lists(st.sampled_from(LOGS[-2].decode().splitlines() + ["SERVER PROTOCOL 2", "Errors", "======",
                                                                  "Warnings", "Rank x -- GPU", ""])
                | st.text(max_size=80), max_size=80))
def test_ras_text_reader_takes_any_lines(lines):
    ras = RasText()
    for line in lines:
        for piece in (line if isinstance(line, list) else [line]):
            ras.add(piece, lambda: {"evidence": "", "source": None, "line": None})
    ras.finish()
    assert all(isinstance(problem["rank"], int) for problem in ras.problems)


@FAST
@given(st.one_of(st.text(max_size=300), mutated([RAS_JSON.encode()]).map(lambda b: b.decode("utf-8", "replace"))))
def test_ras_json_reader_raises_only_its_own_error(text):
    try:
        problems = parse_ras_json(text)
    except RasFormatError:
        return
    assert all(isinstance(problem["rank"], int) for problem in problems)


@FAST
@given(st.one_of(st.binary(max_size=400), mutated([DUMP]), st.binary(max_size=200).map(lambda b: b"\x80\x04" + b)))
def test_flight_recorder_reader_raises_only_its_own_error(data):
    try:
        dump = read_dump(data, "nccl_trace_rank_0")
    except FlightRecorderError:
        return
    compare_dumps([dump])


PLAIN = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                 max_size=4), max_leaves=20)


@FAST
@given(st.dictionaries(st.sampled_from(["entries", "pg_config", "pg_status", "version", "rank"]), PLAIN))
def test_any_plain_pickle_reads_or_is_refused(document):
    try:
        dump = read_dump(pickle.dumps(document), "trace_7")
    except FlightRecorderError:
        return
    compare_dumps([dump, dump])


PERF = [(SAMPLES / name).read_text() for name in (
    "h200-2host-socket-defaults.txt", "04-nccl-ebpf-2rank-1gpu-hostid-socket-nccltests2.18.txt",
    "perf-a3mega-h100-16rank-2node.txt", "h200-validate-2simhosts-multi.txt")]
ERROR_LINES = ["node1: Test NCCL failure common.cu:1550 'invalid usage (run with NCCL_DEBUG=WARN for details) / '",
               "node0: Test CUDA failure common.cu:502 'an illegal memory access was encountered'",
               "node0:2841:2841 [0] misc/socket.cc:72 NCCL WARN socketProgress: Connection closed by remote peer",
               "mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed)."]


@FAST
@given(st.sampled_from(PERF), st.sampled_from(ERROR_LINES), st.data())
def test_an_error_line_anywhere_fails_the_run_whatever_require_complete_says(text, error, data):
    lines = text.splitlines()
    at = data.draw(st.integers(1, len(lines)))
    try:
        runs = parse("\n".join(lines[:at] + [error] + lines[at:]))
    except NcclTestsParseError:
        return
    failed = [run for run in runs if not evaluate_gates(run, require_complete=False)["passed"]]
    assert failed, "an error line was inserted, yet every run passed"
