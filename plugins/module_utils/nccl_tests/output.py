"""Parse nccl-tests output into runs and gate them.

One entry point for the nccl_perf module and the ncclkit package:

- ``parse(data)`` / ``parse_file(path)``: text (any layout since nccl-tests 2.0) or ``-J`` JSON
  -> a list of run dicts, one per test or launch found in the input; ``rows`` holds the first
  rows of the input whole (nccl_tests.rows.MAX_KEPT_ROWS, all runs together), ``row_count``
  counts them all, and every figure and gate reads every row;
- ``evaluate_gates(run, ...)``: the gates a run passes or fails, each with its numbers;
- ``summarize(runs, run_index=0, ...)``: the facts the module returns (the chosen run, its
  gates, and a short line per run).

Only ``NcclTestsParseError`` is raised, with a message naming the cause and the fix.
Pure Python 3.8+ standard library (no Ansible imports), so the Python package can use it too.
"""

from __future__ import annotations

import os

from .json_file import parse_json_document
from .rows import RowBudget, rows_of
from .text import parse_lines, parse_text

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
_CHUNK = 1 << 20

_GZIP_MAGIC = b"\x1f\x8b"


class NcclTestsParseError(ValueError):
    """The input cannot be read as nccl-tests output; the message names the cause and the fix."""


# -- reading -------------------------------------------------------------------------------


def parse(data, max_bytes=DEFAULT_MAX_BYTES):
    """Return the runs in nccl-tests output given as str or bytes (UTF-8)."""
    text = _decode(data, max_bytes)
    if text.lstrip().startswith("{"):
        return _json_runs(text)
    return _text_runs(parse_text(text))


def parse_file(path, max_bytes=DEFAULT_MAX_BYTES):
    """Return the runs in the nccl-tests output file at `path`, refusing files over max_bytes.

    Text is read a chunk at a time and never held whole, so memory does not grow with the file
    (a -J JSON file is read whole: it is one document).
    """
    try:
        size = os.path.getsize(path)
        if size > max_bytes:
            raise NcclTestsParseError(_too_large_message(path, size, max_bytes))
        with open(path, "rb") as handle:
            head = handle.read(_CHUNK)
            sniffed = head.decode("utf-8", "ignore").lstrip("\ufeff").lstrip()
            if head.startswith(_GZIP_MAGIC) or sniffed.startswith("{") or (head and not sniffed):
                # Not text, JSON, or a head of whitespace only: read whole (a file still growing
                # stops at the limit) and checked as in memory.
                return parse(head + handle.read(max_bytes + 1 - len(head)), max_bytes=max_bytes)
            return _text_runs(parse_lines(_file_lines(handle, head, path, max_bytes)))
    except OSError as error:
        raise NcclTestsParseError("cannot read nccl-tests output {0}: {1}; check the path and that "
                                  "the user running this can read it".format(path, error.strerror or error))


def _json_runs(text):
    try:
        raw_runs = [parse_json_document(text)]
    except ValueError as error:
        raise NcclTestsParseError(str(error))
    budget = RowBudget()
    return [_complete_run(raw, rows_of(raw["rows"], budget)) for raw in raw_runs]


def _text_runs(parsed):
    raw_runs, stray_errors = parsed
    if not raw_runs:
        raise NcclTestsParseError(_no_output_message(stray_errors))
    return [_complete_run(raw, raw["row_stats"]) for raw in raw_runs]


def _file_lines(handle, head, path, max_bytes):
    """The lines of a text file as str.splitlines() gives them, decoded a chunk at a time.

    Each piece decoded ends just after a "\n" (no UTF-8 sequence holds that byte, and "\r\n"
    stays whole), so the lines are those of the whole text; the checks of _decode apply to
    each piece, with offsets counted from the start of the file.
    """
    offset, total, nonblank = 0, len(head), False
    parts, chunk = [], head  # parts: the bytes read since the last "\n"
    while chunk:
        cut = chunk.rfind(b"\n") + 1
        if cut:
            parts.append(chunk[:cut])
            piece = b"".join(parts)
            parts = [chunk[cut:]]
            lines, blank = _piece_lines(piece, offset)
            offset += len(piece)
            nonblank = nonblank or not blank
            yield from lines
        else:
            parts.append(chunk)
        chunk = handle.read(_CHUNK)
        total += len(chunk)
        if total > max_bytes:  # the file grew while being read
            raise NcclTestsParseError(_too_large_message(path, total, max_bytes))
    piece = b"".join(parts)
    if piece:
        lines, blank = _piece_lines(piece, offset)
        nonblank = nonblank or not blank
        yield from lines
    if not nonblank:
        raise NcclTestsParseError(_EMPTY_MESSAGE)


def _piece_lines(piece, offset):
    """(lines, whether all blank) of one piece of a file that starts at byte `offset`."""
    nul = piece.find(b"\x00")
    if nul >= 0:
        raise NcclTestsParseError(_binary_message(offset + nul))
    try:
        text = piece.decode("utf-8")
    except UnicodeDecodeError as error:
        raise NcclTestsParseError(_not_utf8_message(piece[error.start], offset + error.start))
    if offset == 0:
        text = text.lstrip("\ufeff")
    return text.splitlines(), not text.strip()


def _decode(data, max_bytes):
    if isinstance(data, (bytes, bytearray, memoryview)):
        data = bytes(data)
        if len(data) > max_bytes:
            raise NcclTestsParseError(_too_large_message("the input", len(data), max_bytes))
        if data.startswith(_GZIP_MAGIC):
            raise NcclTestsParseError("the input is gzip-compressed, not nccl-tests text: "
                                      "decompress it first (zcat FILE > FILE.txt)")
        if b"\x00" in data:
            raise NcclTestsParseError(_binary_message(data.index(b"\x00")))
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise NcclTestsParseError(_not_utf8_message(data[error.start], error.start))
    elif isinstance(data, str):
        if len(data) > max_bytes:
            raise NcclTestsParseError(_too_large_message("the input", len(data), max_bytes))
        if "\x00" in data:
            raise NcclTestsParseError(_binary_message(data.index("\x00")))
        text = data
    else:
        raise NcclTestsParseError("nccl-tests output must be str or bytes, not {0}".format(type(data).__name__))
    text = text.lstrip("\ufeff")
    if not text.strip():
        raise NcclTestsParseError(_EMPTY_MESSAGE)
    return text


_EMPTY_MESSAGE = ("the input is empty: no nccl-tests output to read; check that the benchmark ran and "
                  "that its stdout was captured (2>&1 | tee FILE)")


def _not_utf8_message(byte, offset):
    return ("the input is not UTF-8 text (byte 0x{0:02x} at offset {1}): nccl-tests writes ASCII, so "
            "this is another file or a log with mixed encodings; pass the raw stdout of the benchmark, "
            "or convert it (iconv -f latin1 -t utf-8)".format(byte, offset))


def _too_large_message(what, size, max_bytes):
    return ("{0} is {1} bytes, over the {2}-byte limit for nccl-tests output; a benchmark log is "
            "kilobytes to a few megabytes, so this is likely the wrong file or a log of many runs: "
            "pass one run's output (or raise the limit)".format(what, size, max_bytes))


def _binary_message(offset):
    return ("the input is binary (a NUL byte at offset {0}), not nccl-tests text: pass the "
            "benchmark's stdout or its -J JSON file, not the executable or a core dump".format(offset))


def _no_output_message(stray_errors):
    message = ("no nccl-tests output found: no '# nThread ...' line, device list or result table "
               "(# size count type ... busbw); pass the stdout of an nccl-tests binary such as "
               "all_reduce_perf, or the file written by its -J option")
    if stray_errors:
        message += "; the input does show these failures: " + " | ".join(stray_errors[:5])
    return message


# -- completing a run ----------------------------------------------------------------------


def nccl_version_from_code(code):
    """'2.28.9' from NCCL_VERSION_CODE 22809 (since 2.9: major*10000+minor*100+patch; before: *1000)."""
    if not isinstance(code, int) or code <= 0:
        return None
    major, rest = divmod(code, 10000 if code >= 10000 else 1000)
    minor, patch = divmod(rest, 100)
    return "{0}.{1}.{2}".format(major, minor, patch)


def collective_name(program):
    """all_reduce_perf from all_reduce_perf, all_reduce_perf_mpi or ./build/all_reduce_perf."""
    if not program:
        return None
    name = os.path.basename(program)
    return name[:-len("_mpi")] if name.endswith("_perf_mpi") else name


class ParsedRun(dict):
    """A run's facts; `busbw_points` holds the (size, busbw) pairs of every row when not all rows
    are kept whole (a long output), for the bandwidth gate. Facts are made of plain dicts
    (summarize), so the pairs never travel with them."""

    busbw_points = None


def _complete_run(raw, rows):
    devices = raw["devices"]
    logged_versions = raw["nccl_logged_versions"]
    warnings = list(raw["warnings"])
    if len(logged_versions) > 1:
        # Hosts built from different images: a classic cause of hangs and crashes across nodes.
        warnings.append("ncclkit: the ranks load different NCCL versions ({0}); install one NCCL "
                        "version on every host".format(", ".join(logged_versions)))
    run = ParsedRun({
        "source": raw["source"],
        "collective": collective_name(raw["program"]),
        "nccl_tests_version": raw["nccl_tests_version"],
        "nccl_version": nccl_version_from_code(raw["nccl_library_code"]) or next(iter(logged_versions), None),
        "ranks": len(devices) or None,
        "hosts": sorted({device["host"] for device in devices if device["host"]}),
        "devices": devices,
        "rows": rows.kept,
        "row_count": rows.count,
        "peak_busbw_gbps": rows.peak[0] if rows.peak else None,
        "peak_busbw_size_bytes": rows.peak[1] if rows.peak else None,
        "largest_size_bytes": rows.largest_size,
        # The lowest of the rows at that size: several cycles (-N) or types (-d all) repeat it.
        "largest_size_busbw_gbps": rows.largest_size_busbw,
        "avg_busbw_gbps": raw["avg_busbw_gbps"],
        "avg_busbw_ok": raw["avg_busbw_ok"],
        "wrong_total": rows.wrong_total if rows.wrong_seen else None,
        "data_checked": rows.checked if rows.halves_seen else None,
        "out_of_bounds": raw["out_of_bounds"],
        "complete": raw["footer_seen"] and not raw["errors"],
        "errors": raw["errors"],
        "warnings": warnings,
        "env": raw["env"],
        "args": raw["args"],
        "config": raw["config"],
        "json_version": raw.get("json_version"),
        "start_time": raw.get("start_time"),
        "end_time": raw.get("end_time"),
    })
    if not rows.complete:
        run.busbw_points = rows
    return run


# -- gates ---------------------------------------------------------------------------------


def evaluate_gates(run, min_busbw_gbps=None, gate_min_size_bytes=None, max_wrong=0,
                   expected_ranks=None, require_complete=True):
    """Return {'gates': [{name, limit, measured, passed, message}], 'passed': bool} for one run.

    Any error line (Test NCCL/CUDA failure, NCCL WARN, a launcher's abort) fails the run, also with
    require_complete=False: the no_error_lines gate.

    min_busbw_gbps applies to out-of-place busbw at every size >= gate_min_size_bytes (default:
    only the largest size measured) and takes the lowest of them. max_wrong=None skips that gate;
    a run whose data was not checked (-c 0) passes it with a message saying so.
    """
    gates = []
    if require_complete:
        gates.append(_complete_gate(run))
    error_lines = _error_lines(run)
    if error_lines and not (require_complete and not run["complete"]):
        # An error line fails the run whatever require_complete says (the complete gate, when
        # on and failing, already quotes them).
        gates.append(_gate("no_error_lines", 0, len(error_lines), False,
                           "the output shows {0} error line(s): {1}".format(len(error_lines),
                                                                            " | ".join(error_lines[:3]))))
    if expected_ranks is not None:
        gates.append(_ranks_gate(run, expected_ranks))
    if max_wrong is not None:
        gates.append(_wrong_gate(run, max_wrong))
    if min_busbw_gbps is not None:
        gates.append(_busbw_gate(run, min_busbw_gbps, gate_min_size_bytes))
    if run["avg_busbw_ok"] is not None:
        gates.append(_gate("avg_busbw_check", True, run["avg_busbw_ok"], run["avg_busbw_ok"],
                           "nccl-tests' own check of the average bus bandwidth (-G) {0}: {1} GB/s".format(
                               "passed" if run["avg_busbw_ok"] else "FAILED", _fmt(run["avg_busbw_gbps"]))))
    return {"gates": gates, "passed": all(gate["passed"] for gate in gates)}


def _error_lines(run):
    """nccl-tests' failure lines, launcher aborts and NCCL WARN lines of a run."""
    return list(run["errors"]) + [line for line in run["warnings"] if "NCCL WARN" in line]


def _gate(name, limit, measured, passed, message):
    return {"name": name, "limit": limit, "measured": measured, "passed": bool(passed), "message": message}


def _complete_gate(run):
    if run["complete"]:
        return _gate("require_complete", True, True, True, "the run completed (Avg bus bandwidth footer, no failure)")
    if run["errors"]:
        reason = "it failed: " + " | ".join(run["errors"][:3])
    else:
        reason = "no 'Avg bus bandwidth' footer: the run died or its output was cut short"
    hints = [line for line in run["warnings"] if "NCCL WARN" in line][-2:]  # the latest, nearest the failure
    if hints:
        reason += " (NCCL said: " + " | ".join(hints) + ")"
    return _gate("require_complete", True, False, False, "the run is incomplete, " + reason)


def _ranks_gate(run, expected):
    ranks = run["ranks"]
    if ranks == expected:
        return _gate("expected_ranks", expected, ranks, True, "{0} ranks as expected".format(ranks))
    if ranks is None:
        return _gate("expected_ranks", expected, None, False,
                     "the output lists no devices ('#  Rank N ... on HOST device'), so the rank count "
                     "is unknown; expected_ranks is {0}".format(expected))
    hosts = ", ".join(run["hosts"])
    return _gate("expected_ranks", expected, ranks, False,
                 "{0} ranks on {1} host(s) ({2}), expected_ranks is {3}".format(ranks, len(run["hosts"]), hosts, expected))


def _wrong_gate(run, limit):
    wrong = run["wrong_total"]
    if wrong is not None:
        passed = wrong <= limit
        return _gate("max_wrong", limit, wrong, passed, "{0} wrong elements {1} max_wrong {2}".format(
            wrong, "within" if passed else "is over", limit))
    if run["data_checked"]:
        # Layouts before 2.13 print a max error per row; the footer counts rows out of bounds.
        failed_rows = run["out_of_bounds"]["count"] or 0
        passed = failed_rows <= limit
        return _gate("max_wrong", limit, failed_rows, passed, "{0} rows out of bounds {1} max_wrong {2}".format(
            failed_rows, "within" if passed else "is over", limit))
    if run["data_checked"] is None:
        return _gate("max_wrong", limit, None, True, "no result rows, so no wrong elements were counted")
    return _gate("max_wrong", limit, None, True,
                 "results were not checked (the run used -c 0): wrong elements unknown")


def _busbw_gate(run, limit, min_size):
    floor = min_size if min_size is not None else run["largest_size_bytes"]
    measured, lowest = False, None  # lowest: (busbw, size) of the first lowest row at or above the floor
    for size, busbw in _busbw_points(run):
        measured = True
        if size >= floor and (lowest is None or busbw < lowest[0]):
            lowest = (busbw, size)
    if not measured:
        return _gate("min_busbw_gbps", limit, None, False, "no bus bandwidth was measured, so busbw cannot "
                     "meet min_busbw_gbps {0}".format(_fmt(limit)))
    if lowest is None:
        return _gate("min_busbw_gbps", limit, None, False,
                     "no size >= gate_min_size_bytes {0} was measured (largest: {1} B); lower it or "
                     "run with a larger -e".format(floor, run["largest_size_bytes"]))
    busbw, size = lowest
    passed = busbw >= limit
    message = "busbw {0} GB/s at {1} B {2} min_busbw_gbps {3}".format(
        _fmt(busbw), size, "meets" if passed else "is below", _fmt(limit))
    if not passed and run["ranks"] == 1:
        message += " (one rank: busbw is 0 by definition, gate a run across ranks)"
    return _gate("min_busbw_gbps", limit, busbw, passed, message)


def _busbw_points(run):
    """(size, out-of-place busbw) of every measured row: from the rows, or from the pairs kept
    for a run whose rows are not all kept whole."""
    points = getattr(run, "busbw_points", None)
    if points is not None:
        return points.points()
    return ((row["size_bytes"], row["out_of_place"]["busbw_gbps"]) for row in run["rows"]
            if row["out_of_place"] and row["out_of_place"]["busbw_gbps"] is not None)


def _fmt(number):
    return "{0:g}".format(number) if isinstance(number, (int, float)) else str(number)


# -- facts ---------------------------------------------------------------------------------


def summarize(runs, run_index=0, **gate_options):
    """The nccl_perf facts: runs[run_index] with its gates, plus one summary line per run.

    gate_options are those of evaluate_gates. A negative run_index counts from the end.
    """
    if not runs:
        raise NcclTestsParseError("no runs to summarize; parse some nccl-tests output first")
    if not -len(runs) <= run_index < len(runs):
        raise NcclTestsParseError("run_index {0} is out of range: the output holds {1} run(s), "
                                  "indexes 0 to {2}".format(run_index, len(runs), len(runs) - 1))
    verdicts = [evaluate_gates(run, **gate_options) for run in runs]
    index = run_index % len(runs)
    facts = dict(runs[index])
    facts.update(verdicts[index])
    facts["run_index"] = index
    facts["run_count"] = len(runs)
    facts["runs"] = [_run_line(i, run, verdict) for i, (run, verdict) in enumerate(zip(runs, verdicts))]
    return facts


def _run_line(index, run, verdict):
    keys = ("collective", "nccl_version", "ranks", "hosts", "complete", "peak_busbw_gbps",
            "peak_busbw_size_bytes", "largest_size_bytes", "largest_size_busbw_gbps", "avg_busbw_gbps",
            "wrong_total")
    line = {"index": index}
    line.update((key, run[key]) for key in keys)
    line["passed"] = verdict["passed"]
    line["failures"] = [gate["message"] for gate in verdict["gates"] if not gate["passed"]]
    return line


def failure_message(facts):
    """One line for a failed summary: which run, and each failed gate with its numbers."""
    failures = [gate["message"] for gate in facts["gates"] if not gate["passed"]]
    what = facts["collective"] or "nccl-tests"
    return "run {0} ({1}) failed: {2}".format(facts["run_index"], what, "; ".join(failures))
