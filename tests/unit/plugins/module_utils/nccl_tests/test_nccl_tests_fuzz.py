"""Fuzzing: whatever the input, the nccl-tests parser returns sane runs or raises its own error."""

import copy
import json
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests.output import (
    NcclTestsParseError,
    parse,
    summarize,
)
from conftest import SAMPLES

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

TEXT_SAMPLES = [path.read_text() for path in sorted(SAMPLES.glob("*.txt"))]
JSON_SAMPLE = json.loads((SAMPLES / "h200-1gpu-all_reduce_perf.json").read_text())
SAMPLE_LINES = sorted({line for text in TEXT_SAMPLES for line in text.splitlines()})
NASTY_TOKENS = ["N/A", "nan", "-nan", "inf", "-1", "0", "1e999", "1.04858e+06", "", "#", "#wrong", "size",
                "99999999999999999999999999999", "[1,0]<stdout>:", "[1,1]<stderr>:", "\x1b[31m", "\t", "\r",
                "Test NCCL failure", "NCCL WARN", "NCCL version 2.28.9", "all_reduce_perf", "١٢٣", "_1_"]
NASTY_LINES = ["# Out of bounds values : 99999999999999999999 FAILED", "# Avg bus bandwidth : nan OK",
               "# nccl-tests version x nccl-headers=99999999999999999999 nccl-library=-5",
               "#  Rank 99999999999 Group -1 Pid 0 on h device 0 [] ", "# size count type time busbw",
               "# size count time busbw time busbw", "#       size         count      type     time   algbw   busbw",
               "# nThread: 1 nGpus: 2 minBytes: 3", "{", "}", "\x00"]


def check(data):
    """The parser's contract: runs that serialize as strict JSON and gate cleanly, or its own error."""
    try:
        runs = parse(data)
    except NcclTestsParseError as error:
        assert str(error)
        return
    assert runs
    for run in runs:
        json.dumps(run, allow_nan=False)
        assert isinstance(run["complete"], bool)
        busbw = [row["out_of_place"]["busbw_gbps"] for row in run["rows"]
                 if row["out_of_place"] and row["out_of_place"]["busbw_gbps"] is not None]
        assert run["peak_busbw_gbps"] == (max(busbw) if busbw else None)
        assert all(math.isfinite(value) for value in busbw)
        assert run["ranks"] is None or run["ranks"] == len(run["devices"])
    facts = summarize(runs, min_busbw_gbps=1.0, gate_min_size_bytes=1024, expected_ranks=2, run_index=-1)
    assert isinstance(facts["passed"], bool) and len(facts["runs"]) == len(runs)


@FUZZ
@given(st.text())
def test_any_text(text):
    check(text)


@FUZZ
@given(st.binary())
def test_any_bytes(data):
    check(data)


@FUZZ
@given(st.lists(st.sampled_from(SAMPLE_LINES + NASTY_LINES) | st.text(max_size=60), max_size=60))
def test_lines_of_real_output_in_any_order(lines):
    check("\n".join(lines))


@FUZZ
@given(st.sampled_from(TEXT_SAMPLES), st.data())
def test_mutated_samples(text, data):
    lines = text.splitlines()
    mutation = data.draw(st.sampled_from(["truncate", "shuffle", "insert", "replace_token", "drop"]))
    if mutation == "truncate":
        check(text[:data.draw(st.integers(0, len(text)))])
        return
    if mutation == "shuffle":
        data.draw(st.randoms(use_true_random=False)).shuffle(lines)
    elif mutation == "insert":
        for dummy in range(data.draw(st.integers(1, 5))):
            at = data.draw(st.integers(0, len(lines)))
            lines.insert(at, data.draw(st.sampled_from(NASTY_LINES + NASTY_TOKENS) | st.text(max_size=40)))
    elif mutation == "replace_token" and lines:
        for dummy in range(data.draw(st.integers(1, 5))):
            at = data.draw(st.integers(0, len(lines) - 1))
            tokens = lines[at].split() or [""]
            tokens[data.draw(st.integers(0, len(tokens) - 1))] = data.draw(st.sampled_from(NASTY_TOKENS))
            lines[at] = " ".join(tokens)
    elif mutation == "drop" and lines:
        del lines[data.draw(st.integers(0, len(lines) - 1))]
    check("\n".join(lines))


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=10)


@FUZZ
@given(st.data())
def test_mutated_json(data):
    document = copy.deepcopy(JSON_SAMPLE)
    for dummy in range(data.draw(st.integers(1, 4))):
        target = document
        # Walk down a random path, then replace what is there.
        for dummy in range(data.draw(st.integers(0, 3))):
            if isinstance(target, dict) and target:
                child = target[data.draw(st.sampled_from(sorted(target)))]
            elif isinstance(target, list) and target:
                child = target[data.draw(st.integers(0, len(target) - 1))]
            else:
                break
            if not isinstance(child, (dict, list)):
                break
            target = child
        if isinstance(target, dict) and target:
            target[data.draw(st.sampled_from(sorted(target)))] = data.draw(JSON_VALUES)
        elif isinstance(target, list) and target:
            target[data.draw(st.integers(0, len(target) - 1))] = data.draw(JSON_VALUES)
    text = json.dumps(document)  # NaN and Infinity included: Python's json writes and reads them
    if data.draw(st.booleans()):
        text = text[:data.draw(st.integers(0, len(text)))]
    check(text)
