"""Read the text (stdout) of nccl-tests into raw runs.

Handles every layout since nccl-tests 2.0: the pre-2.13 tables with an ``error`` column and
no ``root``, 2.13+ with ``root`` and ``#wrong``, per-iteration and timestamp columns, the
version/starting/concluded lines of 2.17+, both device-line formats, ``N/A`` under ``-c 0``,
prefixes added by launchers (mpirun ``--tag-output`` / ``--timestamp-output``, prrte, srun
``--label``, Ray/SkyPilot) and NCCL INFO/WARN or MPI noise anywhere, also between rows.

Columns come from the table's header line, never from guessed positions. Values are split on
whitespace, so a number wider than its column (``0.07  14563.56``) reads right.

The raw runs are completed (peaks, totals, versions) by nccl_tests.output; import that module.
Pure Python 3.8+ standard library.
"""

from __future__ import annotations

import math
import os
import re
import sys

from .lines import COUNT, NCCL_VERSION, TEST_FAILURE, device_row
from .rows import RowBudget, RunRows

# Where a line sits in one nccl-tests run; a line of an earlier phase starts the next run.
VERSION, STARTING, NTHREAD, DEVICES, HEADER, ROW, FOOTER, CONCLUDED = range(8)

MAX_COLLECTED_LINES = 50  # errors and warnings kept per run
MAX_LINE_CHARS = 500

_ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
# Prefixes launchers put before each line, tried in turn until none matches.
_LAUNCHER_PREFIXES = (
    # Open MPI --timestamp-output: ctime() glued to the tag
    re.compile(r"[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}"),
    # --tag-output [1,0]<stdout>:, prrte [job,rank][host:pid]<stdout>: and [datetime]<stdout>:
    re.compile(r"(?:\[[^\]\n]{1,128}\]){0,2}<std(?:out|err|diag)>:"),
    # ISO timestamps from kubectl --timestamps, journald exports, NCCL_DEBUG_FILE wrappers
    re.compile(r"\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]?(?=\s)"),
    # srun --label
    re.compile(r"\d{1,6}: "),
)
# The two prefixes above that may start with a digit, tried first on lines that do (rows).
_DIGIT_LED_PREFIX = re.compile(r"\d{4}-|\d{1,6}: ")
# The MPI rank in a [job,rank] tag: each rank's lines are read as a stream of their own.
_MPI_RANK_TAG = re.compile(r"\[[^\],\s\]]{1,64},(\d{1,7})\]")
# An nccl-tests comment line inside a line that starts with an unknown prefix.
_MARKER = re.compile(r"#\s*(?:nThread|nccl-tests version|Collective test|Using devices|Rank\s+\d"
                     r"|size\s+count|Out of bounds|Avg bus bandwidth)")

_COUNT = "(" + COUNT + ")"
_VERSION_LINE = re.compile(
    r"nccl-tests version (\S+)(?:\s+nccl-headers=" + _COUNT + r")?(?:\s+nccl-library=" + _COUNT + ")?")
_STARTING_LINE = re.compile(r"Collective test starting:\s*(\S+)")
_CONCLUDED_LINE = re.compile(r"Collective test concluded:\s*(\S+)")
_NTHREAD_LINE = re.compile(r"nThread:?\s+\d")
_OUT_OF_BOUNDS_LINE = re.compile(r"Out of bounds values\s*:\s*" + _COUNT + r"\s*(OK|FAILED)?")
_AVG_BUSBW_LINE = re.compile(r"Avg bus bandwidth\s*:\s*(\S+)\s*(OK|FAILED)?")
_ERROR_LINE = re.compile(r"error:\s*(\S.*)")

# Config fields of the "# nThread ..." line (rccl-tests writes "nThread: 1", "warmupIters: 5").
_CONFIG_FIELDS = tuple((key, re.compile(label + _COUNT)) for key, label in (
    ("nthreads", r"nThread:?\s+"),
    ("ngpus", r"nGpus:?\s+"),
    ("min_bytes", r"minBytes:?\s+"),
    ("max_bytes", r"maxBytes:?\s+"),
    ("step_factor", r"step:\s*(?=\d+\(factor\))"),
    ("step_bytes", r"step:\s*(?=\d+\(bytes\))"),
    ("warmup_iters", r"warmup(?: iters|Iters):\s*"),
    ("iters", r"(?<!warmup )(?<!agg )\biters:\s*"),
    ("agg_iters", r"agg iters:\s*"),
    ("validation", r"validation:\s*"),
    ("graph", r"graph:\s*"),
    ("unalign", r"unalign:\s*"),
))

# Lines that mean the launcher or the process died (nccl-tests' own failure lines are
# TEST_FAILURE). Searched anywhere: a failure can cut a row.
_LAUNCHER_FAILURE = re.compile(
    r"MPI_ABORT was invoked|exited with non-zero status"
    r"|Primary job\s+terminated normally, but|^a non-zero exit code|Segmentation fault|\(core dumped\)"
    r"|terminate called after|srun: error:|Invalid number of GPUs|were killed by signal|exited on signal \d")
# Words one of which every launcher failure line holds: a substring test spares the rows (nearly
# every line of a long output) two regex searches each.
_FAILURE_WORDS = ("failure", "MPI_ABORT", "non-zero", "Primary job", "Segmentation fault", "core dumped",
                  "terminate called", "srun: error:", "Invalid number of GPUs", "killed by signal",
                  "exited on signal")
_FAILURE_WORD = re.compile("|".join(re.escape(word) for word in _FAILURE_WORDS))
_PROGRAM = re.compile(r"^[a-z][a-z0-9_]*_perf(?:_mpi)?$")

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DATE = re.compile(r"\d{4}-\d\d-\d\d")
_TIME = re.compile(r"\d\d:\d\d:\d\d")

# Header column names of one half (out-of-place or in-place) -> result keys.
_HALF_KEYS = {
    "time": "time_us", "cputime": "time_us", "algbw": "algbw_gbps", "busbw": "busbw_gbps",
    "#wrong": "wrong", "wrong": "wrong", "error": "error",
    "i_min": "iter_min_us", "i_max": "iter_max_us", "i_p99": "iter_p99_us", "i_cv%": "iter_cv_pct",
}
_CHECK_KEYS = ("wrong", "error")  # N/A here means the data was not checked (-c 0)


def parse_text(text):
    """Return (raw_runs, stray_errors): the runs found, and failure lines when there is none."""
    return parse_lines(_lines(text))


def parse_lines(lines):
    """parse_text for an iterable of lines (a file read a chunk at a time), one line at a time.

    Lines tagged by mpirun with an MPI rank are read per rank, so that ranks of an nccl-tests
    built without MPI=1 (each printing a whole one-rank run) do not mix into one another.
    """
    budget = RowBudget()  # rows kept whole, for all runs of this input together
    readers = {}  # stream (MPI rank or None) -> _Reader, in the order first seen
    for line in lines:
        if "\x1b" in line:
            line = _ANSI_ESCAPE.sub("", line)
        stream, payload = _split_launcher_prefix(line)
        if payload:
            reader = readers.get(stream)
            if reader is None:
                reader = readers[stream] = _Reader(budget)
            reader.feed(payload)
    return _merge(readers)


def _merge(readers):
    """The runs of every stream; lines of streams without a run go to the main stream's last run."""
    with_runs = [reader for reader in readers.values() if reader.runs]
    strays = _Noise()
    for reader in readers.values():
        if not reader.runs:
            strays.take(reader.pending)
    if not with_runs:
        return [], strays.errors + strays.warnings
    for reader in with_runs:
        reader.close()
    main = with_runs[0]
    strays.hand_to(main.runs[-1], include_args=False)
    first = main.runs[0]
    if strays.args and not first.args:
        first.args = strays.args
        first.program = first.program or os.path.basename(strays.args[0])
    runs = [run for reader in with_runs for run in reader.runs]
    ranks_with_runs = [stream for stream, reader in readers.items() if reader.runs and stream is not None]
    if len(ranks_with_runs) > 1:
        for run in runs:
            _append(run.warnings, "ncclkit: {0} MPI ranks each printed a whole nccl-tests run; the "
                                  "binary was built without MPI=1 (make MPI=1), so every rank ran "
                                  "alone and nothing crossed the network".format(len(ranks_with_runs)))
    return [run.as_raw() for run in runs], []


class _Table:
    """The column layout of one result table, read from its header line."""

    def __init__(self, prefix, half, trailing):
        self.optional = [name for name in prefix[3:] if name in ("redop", "root")]
        self.half = [_HALF_KEYS.get(name, _column_key(name)) for name in half]
        self.has_timestamp = "timestamp" in trailing

    @classmethod
    def from_header(cls, tokens):
        if tokens[:2] != ["size", "count"]:
            return None
        time_columns = [i for i, name in enumerate(tokens) if name in ("time", "cputime")]
        if not time_columns:
            return None
        first = time_columns[0]
        width = (time_columns[1] - first) if len(time_columns) > 1 else len(tokens) - first
        half = tokens[first:first + width]
        if "busbw" not in half:
            return None
        return cls(tokens[:first], half, tokens[first + 2 * width:])


class _Run:
    """What one run has shown so far."""

    def __init__(self, budget):
        self.phase = -1
        self.table = None
        self.program = None
        self.nccl_tests_version = None
        self.nccl_library_code = None
        self.nccl_logged_versions = []  # from "NCCL version 2.x.y" lines, one per rank that logs it
        self.config = {}
        self.devices = []
        self.rows = RunRows(budget)
        self.out_of_bounds = {"count": None, "ok": None}
        self.avg_busbw_gbps = None
        self.avg_busbw_ok = None
        self.footer_seen = False
        self.errors = []
        self.warnings = []
        self.args = None

    def as_raw(self):
        return {
            "source": "text", "program": self.program, "nccl_tests_version": self.nccl_tests_version,
            "nccl_library_code": self.nccl_library_code, "nccl_logged_versions": self.nccl_logged_versions,
            "devices": self.devices, "rows": self.rows.kept, "row_stats": self.rows,
            "out_of_bounds": self.out_of_bounds,
            "avg_busbw_gbps": self.avg_busbw_gbps, "avg_busbw_ok": self.avg_busbw_ok,
            "footer_seen": self.footer_seen, "errors": self.errors, "warnings": self.warnings,
            "env": {}, "args": self.args, "config": self.config,
        }


class _Noise:
    """Failure lines, NCCL versions and command lines seen outside a run, for the run they belong to."""

    def __init__(self):
        self.errors = []
        self.warnings = []
        self.nccl_logged_versions = []
        self.args = None

    def take(self, other):
        _extend(self.errors, other.errors)
        _extend(self.warnings, other.warnings)
        _extend(self.nccl_logged_versions, other.nccl_logged_versions)
        self.args = self.args or other.args

    def hand_to(self, run, include_args=True):
        _extend(run.errors, self.errors)
        _extend(run.warnings, self.warnings)
        _extend(run.nccl_logged_versions, self.nccl_logged_versions)
        if include_args and self.args and not run.args:
            run.args = self.args
            run.program = run.program or os.path.basename(self.args[0])
        self.errors, self.warnings, self.nccl_logged_versions, self.args = [], [], [], None


class _Reader:
    """Feeds lines one by one into runs; a line of an earlier phase than the current run's starts a new run."""

    def __init__(self, budget):
        self.budget = budget
        self.runs = []
        self.current = None
        self.pending = _Noise()  # lines waiting for the run they belong to
        self.learned_prefixes = []

    def feed(self, payload):
        payload = self._unprefixed(payload)
        if payload.startswith("#"):
            self._comment(payload.lstrip("#").strip())
        elif payload:
            self._other(payload)

    def close(self):
        """Give lines still waiting (after the last footer) to the last run."""
        self.pending.hand_to(self.runs[-1], include_args=False)

    def _unprefixed(self, payload):
        if payload.startswith("#"):
            return payload
        marker_at = payload.find("#")
        if 0 < marker_at <= 200 and _MARKER.match(payload, marker_at):
            self._learn_prefix(payload[:marker_at])
            return payload[marker_at:]
        for prefix in self.learned_prefixes:
            if payload.startswith(prefix):
                return payload[len(prefix):].strip()
        return payload

    def _learn_prefix(self, prefix):
        # Rows carry the same unknown prefix as the header before them (pdsh "host: ", Ray "(head) ").
        if prefix not in self.learned_prefixes and len(self.learned_prefixes) < 8:
            self.learned_prefixes.append(prefix)

    # -- '#' lines ---------------------------------------------------------------------------

    def _comment(self, body):
        handled = (self._version(body) or self._starting(body) or self._nthread(body)
                   or self._device(body) or self._header(body) or self._footer(body)
                   or self._concluded(body))
        if not handled and _ERROR_LINE.match(body):
            # nccl-tests prints "# error: ..." after its own footer: it belongs to that run.
            target = self.current if self.current is not None else self.pending
            _append(target.errors, "# " + body)

    def _version(self, body):
        match = _VERSION_LINE.match(body)
        if not match:
            return False
        run = self._enter(VERSION)
        run.nccl_tests_version = match.group(1)
        run.nccl_library_code = int(match.group(3)) if match.group(3) else None
        return True

    def _starting(self, body):
        match = _STARTING_LINE.match(body)
        if not match:
            return False
        self._enter(STARTING).program = match.group(1)
        return True

    def _nthread(self, body):
        if not _NTHREAD_LINE.match(body):
            return False
        self._enter(NTHREAD).config = _config(body)
        return True

    def _device(self, body):
        if body.startswith("Using devices"):
            self._enter(DEVICES)
            return True
        match = device_row(body)
        if not match:
            return False
        rank, group, pid, host, device, bus_id, name = match.group(
            "rank", "group", "pid", "host", "device", "bus_id", "name")
        self._enter(DEVICES).devices.append({
            "rank": int(rank), "group": int(group) if group is not None else None, "pid": int(pid),
            "host": host, "device": int(device), "bus_id": bus_id.strip(), "name": name.strip(),
        })
        return True

    def _header(self, body):
        if not body.startswith("size"):
            return False
        table = _Table.from_header(body.split())
        if table is None:
            return False
        self._enter(HEADER).table = table
        return True

    def _footer(self, body):
        match = _OUT_OF_BOUNDS_LINE.match(body)
        if match:
            count, verdict = match.groups()
            self._enter(FOOTER).out_of_bounds = {
                "count": int(count), "ok": (verdict == "OK") if verdict else int(count) == 0}
            return True
        match = _AVG_BUSBW_LINE.match(body)
        if not match:
            return False
        run = self._enter(FOOTER)
        run.avg_busbw_gbps = _number(match.group(1))
        run.avg_busbw_ok = {"OK": True, "FAILED": False}.get(match.group(2))
        run.footer_seen = True
        return True

    def _concluded(self, body):
        match = _CONCLUDED_LINE.match(body)
        if not match:
            return False
        run = self._enter(CONCLUDED)
        run.program = run.program or match.group(1)
        return True

    # -- other lines ---------------------------------------------------------------------

    def _other(self, payload):
        if "NCCL INFO" in payload and "failure" not in payload:
            # The bulk of a debug log; only its version line matters here.
            if "NCCL version" in payload:
                self._logged_version(payload)
            return
        if _FAILURE_WORD.search(payload) and (
                TEST_FAILURE.search(payload) or _LAUNCHER_FAILURE.search(payload)):
            self._collect("errors", payload)
        elif "NCCL WARN" in payload:
            self._collect("warnings", payload)
        elif not (payload[0].isdigit() and self._row(payload)):
            if "NCCL version" in payload:
                self._logged_version(payload)
            elif "_perf" in payload:
                args = _command_args(payload)
                if args:
                    # A command line always belongs to the run that follows it.
                    self.pending.args = args

    def _row(self, payload):
        run = self.current
        if run is None or run.table is None or run.phase not in (HEADER, ROW):
            return False
        row = _row(payload.split(), run.table)
        if row is None:
            return False
        run.rows.add(row)
        run.phase = ROW
        return True

    def _logged_version(self, payload):
        logged = NCCL_VERSION.search(payload)
        if logged:
            run = self.current
            target = run if run is not None and run.phase < FOOTER else self.pending
            _append(target.nccl_logged_versions, logged.group("number"))

    def _collect(self, kind, payload):
        # Lines after a run's footer wait for the next run (a launcher failing to start it)
        # or, when none follows, go to the last run.
        run = self.current
        target = run if run is not None and run.phase < FOOTER else self.pending
        _append(getattr(target, kind), payload)

    def _enter(self, phase):
        run = self.current
        if run is None or _starts_new_run(run.phase, phase):
            run = _Run(self.budget)
            self.pending.hand_to(run)
            self.runs.append(run)
            self.current = run
        run.phase = max(run.phase, phase)
        return run


def _starts_new_run(current_phase, phase):
    if phase >= ROW:
        return False
    if phase < current_phase:
        return True
    return phase == current_phase and phase != DEVICES


def _split_launcher_prefix(line):
    """(MPI rank or None, the line without the prefixes launchers put before it)."""
    payload = line.strip()
    stream = None
    for _layer in range(4):  # e.g. a timestamp, then an MPI tag
        if payload.startswith("#"):
            break
        if payload[:1].isdigit() and not _DIGIT_LED_PREFIX.match(payload):
            break  # a result row: the other prefixes start with a letter, "[" or "<"
        match = next((found for found in (pattern.match(payload) for pattern in _LAUNCHER_PREFIXES) if found), None)
        if match is None:
            break
        tag = _MPI_RANK_TAG.match(match.group(0))
        if tag:
            stream = int(tag.group(1))
        payload = payload[match.end():].strip()
    return stream, payload


def _config(body):
    config = {}
    for key, pattern in _CONFIG_FIELDS:
        match = pattern.search(body)
        if match:
            config[key] = int(match.group(1))
    return config


def _row(tokens, table):
    """A result row as a dict, or None when the tokens do not fit the table's columns."""
    if len(tokens) < 3 + len(table.half) or not (_is_int(tokens[0]) and _is_int(tokens[1])):
        return None
    if table.has_timestamp and len(tokens) > 4 and _DATE.fullmatch(tokens[-2]) and _TIME.fullmatch(tokens[-1]):
        tokens = tokens[:-2]
    type_name, rest = tokens[2], tokens[3:]
    if not _WORD.fullmatch(type_name):
        return None
    width = len(table.half)
    # Both halves, or only the in-place half (trace replay prints a blank out-of-place body).
    for value_count in (2 * width, width):
        if len(rest) < value_count:
            continue
        optional = _optional_columns(rest[:len(rest) - value_count], table.optional)
        halves = _halves(rest[len(rest) - value_count:], table.half)
        if optional is None or halves is None:
            continue
        out_of_place, in_place = halves if len(halves) == 2 else (None, halves[0])
        return {
            "size_bytes": int(tokens[0]), "count": int(tokens[1]), "type": sys.intern(type_name),
            "redop": _intern(optional.get("redop")), "root": optional.get("root"),
            "out_of_place": out_of_place, "in_place": in_place,
        }
    return None


def _optional_columns(tokens, names):
    """Map the tokens between type and time onto redop/root; an empty redop prints as nothing."""
    if len(tokens) > len(names):
        return None
    values = {}
    remaining = list(names)
    for token in tokens:
        if "root" in remaining and _is_int(token):
            values["root"] = int(token)
            remaining.remove("root")
        elif "redop" in remaining and _WORD.fullmatch(token):
            values["redop"] = token
            remaining = remaining[remaining.index("redop") + 1:]
        else:
            return None
    return values


def _lines(text, chunk=1 << 20):
    """text.splitlines(), a chunk at a time: a long output never becomes one list of all its lines.
    Chunks end just after a "\n", so a line (and a "\r\n") is never split between two."""
    start = 0
    while start < len(text):
        end = text.find("\n", start + chunk)
        end = len(text) if end < 0 else end + 1
        yield from text[start:end].splitlines()
        start = end


_FLOATS = {}  # token -> its value (None when not finite): a long table repeats its values
_MAX_FLOATS = 1 << 16
_NOT_A_NUMBER = object()


def _value(token):
    """The finite float a column token reads as, None for nan/inf, _NOT_A_NUMBER when unreadable."""
    value = _FLOATS.get(token, _NOT_A_NUMBER)
    if value is _NOT_A_NUMBER:
        if "_" in token:  # float() reads "1_000"; nccl-tests never prints it
            return _NOT_A_NUMBER
        try:
            value = float(token)
        except ValueError:
            return _NOT_A_NUMBER
        value = value if math.isfinite(value) else None
        if len(token) <= 24:  # numbers as nccl-tests prints them; anything longer is not kept
            if len(_FLOATS) >= _MAX_FLOATS:
                _FLOATS.clear()
            _FLOATS[token] = value
    return value


def _intern(value):
    # A million rows share a handful of type and operation names: one string each.
    return sys.intern(value) if isinstance(value, str) else value


def _halves(tokens, keys):
    width = len(keys)
    halves = []
    for start in range(0, len(tokens), width):
        half = {}
        for key, token in zip(keys, tokens[start:start + width]):
            if token == "N/A" and key in _CHECK_KEYS:
                half[key] = None
                continue
            value = _value(token)
            if value is _NOT_A_NUMBER:
                return None
            half[key] = value
        if half.get("wrong") is not None:
            half["wrong"] = int(round(half["wrong"]))
        half.setdefault("wrong", None)
        half.setdefault("error", None)
        halves.append(half)
    return halves


def _command_args(payload):
    """The nccl-tests command in a shell or launcher line: [program, args...]."""
    if len(payload) > 2000:
        return None
    tokens = [token.strip("`'\"") for token in payload.split()]
    for index, token in enumerate(tokens):
        if _PROGRAM.match(os.path.basename(token)):
            return tokens[index:]
    return None


def _number(token):
    """A finite float, or None for nan/inf and anything unreadable."""
    try:
        value = float(token)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _is_int(token):
    # Bounded: int() refuses strings of thousands of digits, and no count has 25.
    digits = token[1:] if token[:1] in "+-" else token
    return len(digits) <= 24 and digits.isascii() and digits.isdigit()


def _column_key(name):
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") or "column"


def _append(lines, line):
    # When full, the last slot keeps the latest line: the one nearest the failure.
    line = line[:MAX_LINE_CHARS]
    if line in lines:
        return
    if len(lines) < MAX_COLLECTED_LINES:
        lines.append(line)
    else:
        lines[-1] = line


def _extend(lines, more):
    for line in more:
        _append(lines, line)
