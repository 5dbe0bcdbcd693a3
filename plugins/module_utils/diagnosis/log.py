"""Read NCCL, Gloo and torch.distributed logs into per-host facts and findings with a cause and a fix.

Pure Python 3.8+ standard library: the nccl_diagnose module and the ncclkit package both use it.

    result = read_nccl_log(text_or_bytes, cluster_cidr="10.0.0.0/8", expected_transport="socket")
    result = read_nccl_log_files(["/var/log/train.log"])

The result (a dict of plain JSON types):
    hosts: {host: {bootstrap_nics: [{name, address}], net_nics: [{name, address?, kind}],
                   transport: "Socket" | "IB" | "OFI(EFA)" | "OFI(<provider>)" | other | None,
                   nccl_versions: ["2.28.9+cuda13.0"], env: {NCCL_SOCKET_IFNAME: "eth1", ...},
                   gpudirect_rdma: "in use" | "partly" | "not in use" | None (NCCL's NET channel lines)}}
    findings: [{code, severity, host, rank, evidence, source, line, count, cause, fix, consequence_of, confidence}]
              the root cause first (diagnosis.root_cause.judge), then independent findings, then consequences
    verdict: one line naming the root cause, HEALTHY, or NOTHING TO JUDGE (no line was recognised)
    judged: False when nothing was recognised (never healthy: `ncclkit diagnose` exits 3)
    nccl_versions: every distinct NCCL version in the log
    multi_node: whether the log shows more than one node
    lines: how many lines were read
    notes: remarks about the input (not UTF-8, nothing recognised)
Lines that name no host (torch tracebacks, bare Gloo errors) are given the host of their launcher
label when an NCCL line with that label names one, else the only host their file's lines name (one
log per node), else the host the file is named after (diagnosis.file_names: "node1.log"), else the
only host in the log, else default_host, else "unknown".
Inputs may also be PyTorch flight-recorder dumps (pickles, read by diagnosis.flight_recorder) and
NCCL RAS JSON reports (diagnosis.ras); they add evidence about hangs but no lines.
"""

from __future__ import annotations

import gc
import gzip
import os
import re
import zlib
from functools import partial
from typing import Dict, List, Optional

from .compare import CUDA_VERSION, TORCH_VERSION, runtime_findings, setting_findings
from .exceptions import CHAINED, IGNORED, TRACEBACK, Tracebacks
from .root_cause import judge, verdict
from .stages import MARKERS as STAGE_MARKERS
from .stages import Stages
from .timeline import line_time
from .rules import (
    NEEDLES,
    anchors,
    describe_peer,
    match_line,
    nccl_warning,
    is_virtual,
    majority_network,
    nic_findings,
    parse_networks,
    sort_key,
    transport_findings,
    version_findings,
)
from .compare import dumps_desync_finding
from .file_names import file_host, file_rank
from .flight_recorder import FlightRecorderError, compare_dumps, dumps_desync, looks_like_pickle, read_dump
from .job import file_stem, pci_number, MARKERS as JOB_MARKERS
from .job import JobEvidence
from .lines import (
    MAX_BYTES,
    MAX_FILE_BYTES,
    StreamReader,
    Line,
    NcclLogError,
    bootstrap_nics,
    channel_gdr,
    decode,
    device_row_host,
    env_setting,
    net_nics,
    network_name,
    nccl_version,
    node_count,
    ofi_provider,
    split_lines,
)
from .ras import RasFormatError, json_start, parse_ras_json

__all__ = ["MAX_BYTES", "MAX_FILE_BYTES", "NcclLogError", "TRANSPORTS", "read_nccl_log", "read_nccl_log_files"]

TRANSPORTS = ("any", "socket", "ib", "efa")
UNKNOWN_HOST = "unknown"
# NCCL's socket connects that failed: a peer was there to reach.
PEER_CONNECT_FAILURES = frozenset(("connect_refused", "connect_timeout", "no_route", "connect_failed",
                                   "retry_exceeded"))
_EVIDENCE_CHARS = 500
_MEANINGS = 8192  # distinct NCCL messages remembered at once
# Every substring a reader of lines that are not NCCL's own looks for (the rules, the job, the stages,
# tracebacks, versions), and a few short pieces that every one of them holds.
_MARKERS = (NEEDLES + JOB_MARKERS + STAGE_MARKERS + CHAINED
            + (TRACEBACK, IGNORED, "ersion", "torch==", "NCCL version", "Test "))
_LINE_ANCHORS = anchors(_MARKERS)
# Two-letter pieces first: a line holding none of these (most lines) is passed over after 17 tests, not 47.
_LINE_PAIRS = anchors(_MARKERS, 2)
_COMM_RANK = re.compile(r"\bcomm \S+ rank (?P<rank>\d+) n[Rr]anks \d+")
_LABEL_RANK = re.compile(r"^(?:rank|\d+,)?(?P<rank>\d+)$")


def read_nccl_log(data, cluster_cidr=None, cluster_ips=None, expected_transport: str = "any",
                  default_host: Optional[str] = None, max_bytes: int = MAX_BYTES, source: str = "content") -> dict:
    """Diagnose one log given as str or bytes; raise NcclLogError (only) for unusable input."""
    return _diagnose([(source, data, False)], cluster_cidr, cluster_ips, expected_transport, default_host, max_bytes)


def read_nccl_log_files(paths, cluster_cidr=None, cluster_ips=None, expected_transport: str = "any",
                        default_host: Optional[str] = None, max_bytes: int = MAX_FILE_BYTES,
                        file_hosts: Optional[Dict[str, str]] = None) -> dict:
    """Diagnose several log files as one log (all ranks of a job); max_bytes caps their total.

    Files are read line by line, so memory stays small whatever their size. A path may also be an
    open binary file object (stdin's buffer), named by its `name` attribute. file_hosts: {path: host}
    for a caller that knows whose log a file is (a launcher's log per host); it is used where the
    file's name would be.
    """
    if isinstance(paths, (str, bytes, os.PathLike)) or hasattr(paths, "read"):
        paths = [paths]
    return _diagnose([(_name(path), path, True) for path in paths], cluster_cidr, cluster_ips, expected_transport,
                     default_host, max_bytes, {os.fsdecode(k): v for k, v in (file_hosts or {}).items()})


def _name(path) -> str:
    if hasattr(path, "read"):
        return str(getattr(path, "name", "<stdin>"))
    if not isinstance(path, (str, bytes, os.PathLike)):
        # open() would take an int for a file descriptor.
        raise NcclLogError(f"expected a file path, got {type(path).__name__}")
    return os.fsdecode(path)


def _diagnose(sources, cluster_cidr, cluster_ips, expected_transport, default_host, max_bytes,
              file_hosts=None) -> dict:
    if expected_transport not in TRANSPORTS:
        raise NcclLogError(f"expected_transport must be one of {', '.join(TRANSPORTS)}, not {expected_transport!r}")
    try:
        networks = parse_networks(cluster_cidr, cluster_ips)
    except (TypeError, ValueError) as error:
        raise NcclLogError(str(error)) from None
    log = _Log(expected_transport, file_hosts)
    budget = [max_bytes]
    # The cyclic garbage collector would scan every fact kept so far again and again while millions of
    # short-lived lines go by (15 % of the time on a 1 GiB log of 92000 ranks); what the reader builds
    # holds no reference cycle, so reference counting frees it all: the collector pauses while reading.
    collecting = gc.isenabled()
    gc.disable()
    try:
        for source, data, is_file in sources:
            if is_file:
                _read_stream(log, source, data, budget)
            else:
                _read_data(log, source, data, max_bytes)
    finally:
        if collecting:
            gc.enable()
    if log.empty and len(log.empty) == len(sources):
        raise NcclLogError(f"{', '.join(log.empty)}: empty: nothing to diagnose (check the path, and that "
                           "the job wrote its output there)")
    log.notes.extend(f"{source}: empty" for source in log.empty)
    return log.result(networks, default_host or UNKNOWN_HOST)


def _read_data(log, source: str, data, max_bytes: int) -> None:
    if isinstance(data, (bytes, bytearray, memoryview)) and looks_like_pickle(data):
        log.add_dump(source, bytes(data))
        return
    text, notes = decode(data, source, max_bytes)
    log.notes.extend(notes)
    if _looks_like_ras_json(text):
        log.add_ras_json(source, text)
        return
    for line in split_lines(text):
        log.add(source, line)


# The fix for a log that cannot be opened or read, after the system's reason.
READ_FIX = "; check the path and that the user running this can read it"


def _read_stream(log, source: str, path, budget: list) -> None:
    """A file (path or open binary object), line by line, within budget[0] bytes for all files."""
    try:
        handle = path if hasattr(path, "read") else open(path, "rb")
    except (OSError, ValueError) as error:
        raise NcclLogError(f"{source}: cannot read: {getattr(error, 'strerror', None) or error}{READ_FIX}") from None
    reader = StreamReader(handle, source, budget[0])
    try:
        if reader.head()[:2] == _GZIP_MAGIC:
            # A compressed log (logrotate's .gz): the same lines, decompressed as they are read.
            unzipped = gzip.GzipFile(fileobj=_Replay(reader.head(), handle), mode="rb")
            reader = StreamReader(unzipped, source, budget[0])
        if reader.empty():
            log.empty.append(source)
            return
        head = reader.head()
        if looks_like_pickle(head):
            log.add_dump(source, reader.rest())
        elif _looks_like_ras_json(head.decode("utf-8", "replace")):
            log.add_ras_json(source, decode(reader.rest(), source, budget[0])[0])
        else:
            add = log.add
            for batch in reader.batches():
                for line in batch:
                    add(source, line)
        log.notes.extend(reader.notes)
    except (OSError, EOFError, zlib.error) as error:
        raise NcclLogError(f"{source}: cannot read: {getattr(error, 'strerror', None) or error}{READ_FIX}") from None
    finally:
        budget[0] -= reader.size
        if handle is not path:
            handle.close()


_GZIP_MAGIC = b"\x1f\x8b"


class _Replay:
    """A binary stream whose first bytes were already read: gives them again, then the rest."""

    def __init__(self, head: bytes, handle):
        self.head, self.handle = head, handle

    def read(self, count: int = -1) -> bytes:
        if self.head:
            data, self.head = (self.head, b"") if count < 0 or count >= len(self.head) else \
                (self.head[:count], self.head[count:])
            return data
        return self.handle.read(count)


def _looks_like_ras_json(text: str) -> bool:
    head = text[:4096]
    start = json_start(head)
    return 0 <= start < 200 and '"communicators"' in head


def _new_host() -> dict:
    # nets and versions: {value: where it was first seen ({evidence, source, line})}; "net" is the last net.
    # Only distinct values are kept, so that memory (and the garbage collector's work) stays small.
    return {"bootstrap_nics": {}, "net_nics": {}, "nets": {}, "net": None, "ofi": [], "versions": {}, "env": {},
            "channels": {"gdr": 0, "host_memory": 0}}


class _Log:
    """What the lines said so far; hosts of unlabelled lines are settled at the end."""

    def __init__(self, expected_transport: str, file_hosts: Optional[Dict[str, str]] = None):
        self.expected = expected_transport
        self.file_hosts = file_hosts or {}  # source -> the host whose log it is, as the caller knows it
        self.hosts: Dict[str, dict] = {}
        self.label_hosts: Dict[str, str] = {}
        self.pending: Dict[tuple, dict] = {}  # (code, host, label, source, cause) -> first finding, with a count
        self.source_hosts: Dict[str, set] = {}  # source -> up to two hosts its NCCL lines name
        self.loose_versions: Dict[tuple, dict] = {}  # (version, label, source) -> origin, from lines without a host
        self.nodes = 0
        self.lines = 0
        self.notes: List[str] = []
        self.job = JobEvidence()
        self.dumps: List[dict] = []
        self.ras_problems: List[dict] = []
        self.empty: List[str] = []  # files with nothing but whitespace
        self.meanings: Dict[tuple, list] = {}  # (level, NCCL message) -> its findings
        self.tracebacks = Tracebacks()
        self.label_pids: Dict[str, tuple] = {}  # launcher label -> (host, pid) of its NCCL lines
        self.last_line: Optional[Line] = None
        self.last_source = ""
        self.sources: List[str] = []  # every file read, in order
        self.stages = Stages()
        self.source_ranks: Dict[str, set] = {}  # source -> up to two ranks its lines name (one file per rank)
        self.runtime: Dict[str, Dict[str, dict]] = {"torch": {}, "CUDA": {}}  # what -> {host or label: {v: origin}}
        self.env_origins: Dict[tuple, dict] = {}  # (host, NCCL_* name) -> origin of a line that set that value
        self.retried: Dict[str, Dict[str, int]] = {}  # host -> {address: NCCL retry lines refused or unreached}
        self.shared_origins: Dict[tuple, dict] = {}  # a (kind, value) -> the origin of its first line

    def add_dump(self, source: str, data: bytes) -> None:
        try:
            dump = read_dump(data, source)
        except FlightRecorderError as error:
            raise NcclLogError(str(error)) from None
        self.dumps.append(dump)
        self.notes.append(f"{source}: flight-recorder dump of rank {dump['rank']} ({len(dump['entries'])} entries)")

    def add_ras_json(self, source: str, text: str) -> None:
        try:
            problems = parse_ras_json(text)
        except RasFormatError as error:
            raise NcclLogError(f"{source}: {error}") from None
        self.ras_problems.extend(
            dict(p, origin={"evidence": f"NCCL RAS (JSON): rank {p['rank']}: {p['reason']} (process {p['pid']} "
                                        f"on {p['node']})", "source": source, "line": None})
            for p in problems)
        self.notes.append(f"{source}: NCCL RAS JSON report naming {len(problems)} problem rank(s)")

    def add(self, source: str, line: Line) -> None:
        self.lines += 1
        self.last_line = line
        if source != self.last_source and source not in self.sources:
            self.sources.append(source)
        self.last_source = source
        dummy, text, label, host, level, msg, dummy = line
        stages, job = self.stages, self.job
        if level:
            stages.torch = True
            # NCCL's lines tell the job and its stages only about communicators and their init.
            if "connect to " in msg and " returned " in msg:  # NCCL's retries name the address the WARN leaves out
                retried = _RETRIED.search(msg)
                if retried:
                    counts = self.retried.setdefault(host, {})
                    counts[retried["addr"]] = counts.get(retried["addr"], 0) + 1
            if "nranks" in msg or "nRanks" in msg or "Init " in msg or "Connected all" in msg or "Destroy" in msg \
                    or "Mismatched NCCL version" in msg or "Using network " in msg:
                origin = partial(_origin, line, source)  # evidence built only for the few lines that matter
                job.add(line, origin)
                stages.add(line, origin)
        else:
            if label and not stages.torch and label.startswith("rank"):
                stages.torch = True
            if text.endswith(("s/it]", "it/s]")):
                # A tqdm bar (nothing glued after it): only each file's last one is read, once, at the end.
                stages.progress_line(source, line)
                return
            # The cheap prefilter: a line outside any open block that holds no marker of any reader
            # (nearly every line of a training log) is counted and nothing more.
            if not (job.watching() or stages.tests is not None or self.tracebacks.open or text[:1] == "#"
                    or (any(map(text.__contains__, _LINE_PAIRS)) and any(map(text.__contains__, _LINE_ANCHORS)))):
                return
            origin = partial(_origin, line, source)
            job.add(line, origin)
            stages.add(line, origin)
        if host:
            if label:
                self.label_hosts.setdefault(label, host)
                if level and label not in self.label_pids:
                    self.label_pids[label] = (host, _pid(line))
            named = self.source_hosts.get(source)
            if named is None:
                named = self.source_hosts[source] = set()
            if len(named) < 2:
                named.add(host)
            facts = self.hosts.get(host)
            self._facts(facts if facts is not None else self._host(host), line, source)
        elif text[:1] == "#" or "NCCL version" in text:
            self._loose_facts(line, source)
        self._findings(line, source)
        if not level:
            if self.tracebacks.open or "Traceback" in text or "Exception ignored" in text or "above exception" in text \
                    or "CUDA out of memory" in text:
                self._own_error(line, source)
            if "ersion" in text or "torch==" in text:
                self._runtime(line, source)

    def _shared(self, value: tuple, line: Line, source: str) -> dict:
        """The origin of the first line that showed this value, one object shared by every host that
        shows it: thousands of hosts with one version or setting keep one evidence string, not thousands."""
        origin = self.shared_origins.get(value)
        if origin is None:
            origin = self.shared_origins[value] = _origin(line, source)
        return origin

    def _own_error(self, line: Line, source: str) -> None:
        found = self.tracebacks.feed(line, source)
        if found is None:
            return
        rank = self.job.report_rank()
        key = (found["code"], line.host, line.label, source, found["exception"])
        if key in self.pending:
            self.pending[key]["count"] += 1
        else:
            self.pending[key] = dict(found, count=1, _rank=rank, **dict(_origin(line, source), time=found["time"]))

    def _runtime(self, line: Line, source: str) -> None:
        text = line.text
        where = line.host or f"label:{line.label}" if line.label else line.host or f"source:{source}"
        for what, pattern in (("torch", TORCH_VERSION), ("CUDA", CUDA_VERSION)):
            if what == "torch" and "orch" not in text:
                continue
            if what == "CUDA" and "CUDA" not in text and "+cuda" not in text and ".cuda" not in text:
                continue
            match = pattern.search(text)
            if match:
                version = next(v for v in match.groups() if v)
                seen = self.runtime[what].setdefault(where, {})
                if version not in seen and len(seen) < 4:
                    seen[version] = self._shared((what, version), line, source)

    def _host(self, name: str) -> dict:
        if name not in self.hosts:
            self.hosts[name] = _new_host()
        return self.hosts[name]

    def _facts(self, host: dict, line: Line, source: str) -> None:
        # Each reader is tried only where its words are: most lines carry no fact at all.
        msg = line.msg
        if msg.startswith("Bootstrap"):
            for nic in bootstrap_nics(line):
                _add_nic(host["bootstrap_nics"], nic, line, source)
        provider = None
        if msg.startswith("NET/"):
            for nic in net_nics(line):
                _add_nic(host["net_nics"], nic, line, source)
            provider = ofi_provider(line)
        net = network_name(line) if "Using network" in msg or "via NET/" in msg else None
        version = nccl_version(line) if "NCCL version" in msg else None
        setting = env_setting(line) if "set by environment" in msg else None
        if net:
            if net not in host["nets"]:
                host["nets"][net] = _origin(line, source)
            host["net"] = net
            gdr = channel_gdr(line)
            if gdr is not None:
                host["channels"]["gdr" if gdr else "host_memory"] += 1
        if provider and provider not in host["ofi"]:
            host["ofi"].append(provider)
        if version and version not in host["versions"]:
            host["versions"][version] = _origin(line, source)
            if "+cuda" in version:
                cuda = version.split("+cuda", 1)[1]
                self.runtime["CUDA"].setdefault(line.host, {}).setdefault(cuda, self._shared(("CUDA", cuda), line,
                                                                                             source))
        if setting:
            host["env"][setting[0]] = setting[1]
            if (line.host, setting[0]) not in self.env_origins:
                self.env_origins[(line.host, setting[0])] = self._shared(setting, line, source)
        # A channel over NET/ joins ranks that NCCL sees on different nodes.
        if ("nranks" in msg or "nRanks" in msg) and "comm " in msg:
            ranks = self.source_ranks.setdefault(source, set())
            match = _COMM_RANK.search(msg)
            if match and len(ranks) < 2:
                ranks.add(int(match.group("rank")))
        if "nNodes" in msg:
            self.nodes = max(self.nodes, node_count(line) or 0)
        if net and self.nodes < 2 and "via NET/" in msg:
            self.nodes = 2

    def _loose_facts(self, line: Line, source: str) -> None:
        row_host = device_row_host(line)
        if row_host:
            self._host(row_host)
        version = nccl_version(line)
        if version and (version, line.label, source) not in self.loose_versions:
            self.loose_versions[(version, line.label, source)] = _origin(line, source)

    def _findings(self, line: Line, source: str) -> None:
        if line.level:
            # NCCL repeats the same messages on every rank: what one message means is looked up
            # once (the rules read only the message, never the host:pid prefix before it).
            key = (line.level, line.msg)
            found = self.meanings.get(key)
            if found is None:
                found = match_line(line.text, self.expected)
                if not found and line.level == "WARN":
                    found = [nccl_warning(line.msg)]
                if len(self.meanings) >= _MEANINGS:
                    self.meanings.clear()
                self.meanings[key] = found
        else:
            found = match_line(line.text, self.expected)
        # A line that names its host needs no label to settle it: one entry per host, not per rank.
        label = None if line.host else line.label
        for finding in found:
            key = (finding["code"], line.host, label, source, finding["cause"])
            if key in self.pending:
                self.pending[key]["count"] += 1
            else:
                self.pending[key] = dict(finding, count=1, _pid=_pid(line) if line.host else None,
                                         _label=line.label, **_origin(line, source))

    # ---- the end ----

    def result(self, networks, default_host: str) -> dict:
        self.job.finish()
        # torchrun's error report names the host its agent runs on: the host of that file's lines.
        for death in self.job.deaths:
            source = (death.get("origin") or {}).get("source")
            if death.get("how") == "torchrun" and death.get("host") and source and not self.source_hosts.get(source):
                self.source_hosts[source] = {death["host"]}
                self._host(death["host"])
        # A task launcher's announcement (submitit) names the host and rank of that task's files.
        for source in self.sources:
            task = self.job.task_files.get(file_stem(source))
            if task and not self.source_hosts.get(source):
                self.source_hosts[source] = {task[0]}
                self.source_ranks.setdefault(source, set()).add(task[1])
                self._host(task[0])
        fallback = next(iter(self.hosts)) if len(self.hosts) == 1 else default_host

        def settle(label, source=None):
            named = self.source_hosts.get(source, ())
            return (self.label_hosts.get(label) or (next(iter(named)) if len(named) == 1 else None)
                    or self.file_hosts.get(source) or file_host(source, self.hosts) or fallback)

        self._place_announced(settle)

        for (version, label, source), origin in self.loose_versions.items():
            host = settle(label, source)
            if host != UNKNOWN_HOST:
                self._host(host)["versions"].setdefault(version, origin)
                if "+cuda" in version:
                    self.runtime["CUDA"].setdefault(host, {}).setdefault(version.split("+cuda", 1)[1], origin)
        findings = [dict(finding, host=host or settle(label, source),
                         rank=self._rank(finding, host, finding.get("_label", label), source))
                    for (dummy, host, label, source, dummy), finding in self.pending.items()]
        for finding in findings:
            if _own_exception(finding) and finding["rank"] is None:
                finding["rank"] = self._failed_rank(finding["source"])
                if finding["rank"] is not None and finding["host"] in (UNKNOWN_HOST, default_host):
                    finding["host"] = self._rank_host(finding["rank"]) or finding["host"]
            if finding.get("_bus") and finding["rank"] is None:  # an Xid: the rank on that GPU, or its pid's
                job, pid = self.job, finding.get("_xid_pid")
                finding["rank"] = job.bus_rank.get((finding["host"], pci_number(finding["_bus"])))
                if finding["rank"] is None and pid:
                    finding["rank"] = job.pid_rank.get((finding["host"], pid),
                                                       job.pid_rank.get((job.pid_hosts.get(pid), pid)))
                if finding["rank"] is None and pid:  # the launcher's report of that pid's exit names its rank
                    finding["rank"] = next((d["rank"] for d in job.deaths if d.get("pid") == pid
                                            and d.get("rank") is not None
                                            and d.get("host") in (None, finding["host"])), None)
        # Xids of one GPU are one fault: one that names its process's rank names it for the others.
        bus_ranks = {(f["host"], pci_number(f["_bus"])): f["rank"] for f in findings
                     if f.get("_bus") and f["rank"] is not None}
        for finding in findings:
            if finding.get("_bus") and finding["rank"] is None:
                finding["rank"] = bus_ranks.get((finding["host"], pci_number(finding["_bus"])))
        unranked = [f for f in findings if _own_exception(f) and f["rank"] is None]
        for finding in unranked:
            finding["rank"] = self._quiet_rank(finding["host"])
            if finding["rank"] is None and len(unranked) == 1:
                finding["rank"] = self._first_exit()
            if finding["rank"] is not None and finding["host"] in (UNKNOWN_HOST, default_host):
                finding["host"] = self._rank_host(finding["rank"]) or finding["host"]
        for finding in findings:
            if _own_exception(finding):
                finding["cause"] = _who(finding) + finding["cause"]
        odd = self.job.odd_version()
        for finding in findings:
            if odd and finding.get("_versions"):
                version, ranks, common = odd
                hosts = sorted({self._rank_host(rank) for rank in ranks} - {None})
                where = f" on {', '.join(hosts)}" if hosts else ""
                finding.update(host=hosts[0] if len(hosts) == 1 else finding["host"], rank=None, cause=(
                    f"rank(s) {', '.join(map(str, ranks[:8]))}{where} run NCCL {version} while the others run "
                    f"{common} (NCCL's version codes: 22703 is 2.27.3): the ranks of one job must load the same NCCL"))
        common = {}  # code -> (address, its host, how it is known, the hosts reporting failures with it) or None
        for finding in findings:
            if finding.get("_subject_host"):  # about the host the line names (the one SSH could not start on)
                finding["host"] = finding["_subject_host"]
                self._host(finding["host"])
                if finding.get("_subject_pid"):
                    finding["rank"] = self.job.pid_rank.get((finding["host"], finding["_subject_pid"]))
            if finding["code"] in ("connect_refused", "no_route"):
                self._refusing_peer(finding)
            if finding["code"] in COMMON_PEER_CODES:
                if finding["code"] not in common:
                    common[finding["code"]] = self._common_peer(findings, finding["code"])
                shared = common[finding["code"]]
                if shared and _peer_address(finding) == shared[0]:
                    address, owner, known, reporters = shared
                    _to_the_one_culprit(finding, [owner], lambda culprit, reporter: (
                        f" ({address} is {culprit}'s, {known}: {len(reporters)} hosts ({', '.join(reporters)}) "
                        "failed with it)"))
            if finding["code"] == "launch_failed" and "pyxis" in finding.get("evidence", "") \
                    and finding["host"] in (UNKNOWN_HOST, default_host):
                # The task failure srun reports next in the same file names the node.
                finding["host"] = next((d["node"] for d in self.job.deaths if d.get("how") == "srun" and d.get("node")
                                        and (d.get("origin") or {}).get("source") == finding.get("source")
                                        and ((d.get("origin") or {}).get("line") or 0) > (finding.get("line") or 0)),
                                       finding["host"])
            if finding["code"] == "connect_failed" and "Address family not supported" in finding.get("evidence", ""):
                self._family_setter(finding)
            if finding["code"] == "no_socket_interface":
                named = ((self.hosts.get(finding["host"]) or {}).get("env") or {}).get("NCCL_SOCKET_IFNAME")
                if named:
                    finding["cause"] += f" (here NCCL_SOCKET_IFNAME={named})"
            name = _peer_name(finding.get("_peer"))
            if finding["code"] == "connect_timeout" and name in self.job.unresolved:
                # The store's host name never resolved where it was asked: the name is the problem, not a port.
                asked = finding["host"]
                finding.update(host=name, rank=None, cause=(
                    f"{finding['cause']}; {name} does not resolve on {asked} (torch's c10d: gai error -2, Name or "
                    f"service not known, {self.job.unresolved[name]} time(s)): the name is in no DNS or /etc/hosts "
                    "the other hosts read (a pod or node name without a DNS record)"),
                    fix=f"make {name} resolve on every host (a headless Kubernetes service per pod, or /etc/hosts), or "
                        "give the rendezvous an address instead of a name (MASTER_ADDR, --rdzv_endpoint)")
                self._host(name)
            if finding["code"] in ("cuda_error", "test_nccl_failure") and finding["rank"] is None:
                pid = self.job.test_failure_pid.get(finding["host"])  # nccl-tests' " .. HOST pid N: Test failure"
                finding["rank"] = self.job.pid_rank.get((finding["host"], pid)) if pid else None
        for finding in findings:
            if finding.get("_subject"):  # about the rank the line names, not the one that printed it
                finding["host"] = self._rank_host(finding["rank"]) or UNKNOWN_HOST
            elif finding["host"] in (UNKNOWN_HOST, default_host) and finding["rank"] is not None:
                finding["host"] = self._rank_host(finding["rank"]) or finding["host"]
        # A failed connection to a peer shows another process to reach even in one node's log.
        peers = any(finding["code"] in PEER_CONNECT_FAILURES for finding in findings)
        findings += self._derived(networks, settle, peers)
        dumps_verdict = compare_dumps(self.dumps) if self.dumps else None
        if dumps_verdict:
            dumps_verdict["source"] = ", ".join(d["name"] for d in self.dumps)
        desync = dumps_desync(self.dumps) if len(self.dumps) > 1 else None
        if desync:
            findings.append(dumps_desync_finding(desync, self.job, ", ".join(d["name"] for d in self.dumps)))
        recognised = self._recognised(findings)
        if self.last_line is not None:
            self.stages.last = _origin(self.last_line, self.last_source)
        findings = judge(_dedupe(findings), self.job, dumps_verdict, self.ras_problems,
                         lambda host: host or fallback, self.stages if recognised else None)
        findings = [dict({key: finding.get(key) for key in PUBLIC_KEYS}, host=finding.get("host") or UNKNOWN_HOST,
                         confidence=finding.get("confidence") or "high")
                    for finding in findings]
        nothing = None if recognised else self._nothing()
        return {
            "verdict": nothing or verdict(findings, self.lines, list(self.hosts)),
            "judged": nothing is None,
            "hosts": {name: _public(facts) for name, facts in self.hosts.items()},
            "findings": findings,
            "nccl_versions": _distinct([v for facts in self.hosts.values() for v in facts["versions"]]
                                       + [key[0] for key in self.loose_versions]),
            "multi_node": self._multi_node(),
            "lines": self.lines,
            "notes": self.notes + ([nothing] if nothing else []),
        }

    def _refusing_peer(self, finding: dict) -> None:
        """A refusal or a reject ('no route', ICMP admin-prohibited) comes from the peer: where the logs tie
        the peer's address to another host of the job (its NCCL interfaces), that host is the finding's."""
        peer = describe_peer(finding.get("_peer") or "").split(" port ")[0]
        if not peer:  # the WARN after the retries names no address: the one its host's retries named
            retried = self.retried.get(finding["host"]) or {}
            peer = max(retried, key=retried.get) if len(retried) == 1 else ""
        address = re.match(r"\[?([0-9a-fA-F.:]+?)\]?$", peer)
        if not address:
            return
        _to_the_one_culprit(finding, self._owners(address.group(1)), lambda owner, reporter: (
            f" ({address.group(1)} is {owner}'s, as its NCCL lines show: {reporter} reported it)"))

    def _owners(self, address: str) -> List[str]:
        """The hosts whose NCCL interfaces (bootstrap or network) hold `address`."""
        return sorted({name for name, info in self.hosts.items()
                       for nics in (info["bootstrap_nics"], info["net_nics"]) for (dummy, where) in nics
                       if where == address})

    def _common_peer(self, findings: List[dict], code: str):
        """(address, its host, how that is known, the reporting hosts) for the one peer address that several
        hosts' failures of `code` name, or None. A host whose HCA, port, firewall or advertised address is at
        fault fails with every peer, and every peer names it. Its host: the one whose NCCL interfaces hold the
        address; for RDMA, the one whose own errors carry the peer's RoCE GID as theirs; else the one host of
        the job that did not report failing with it."""
        reporters: Dict[str, set] = {}
        for finding in findings:
            address = _peer_address(finding) if finding["code"] == code else None
            if address and finding["host"] not in (None, UNKNOWN_HOST):
                reporters.setdefault(address, set()).add(finding["host"])
        ranked = sorted(reporters.items(), key=lambda item: -len(item[1]))
        if not ranked or len(ranked[0][1]) < 2 or (len(ranked) > 1 and len(ranked[1][1]) == len(ranked[0][1])):
            return None
        address, named_by = ranked[0]
        owners, known = self._owners(address), "as its NCCL lines show"
        if not owners and code == "ib_completion_error":
            # NCCL 2.19+ names both ends' RoCE GIDs ("localGid ::ffff:10.60.1.16 remoteGids::ffff:10.60.1.17"):
            # the peer is the host whose own failed transfers name that GID as theirs.
            local = {gid: f["host"] for f in findings if f["code"] == code
                     for gid in _GID_LOCAL.findall(f.get("evidence") or "")}
            owners = sorted({local[gid] for f in findings if _peer_address(f) == address
                             for gid in _GID_REMOTE.findall(f.get("evidence") or "") if gid in local})
            known = "by the RoCE GIDs both ends print"
        if not owners:
            job_hosts = set(self.hosts) | {self.file_hosts.get(source) or file_host(source, self.hosts)
                                           for source in self.sources}
            owners = sorted(name for name in job_hosts if name and name not in named_by and name != UNKNOWN_HOST)
            known = "the one host of the job that did not report failing with it"
        return (address, owners[0], known, sorted(named_by)) if len(owners) == 1 else None

    def _family_setter(self, finding: dict) -> None:
        """A socket of a peer's family failed here: the one host whose NCCL_SOCKET_FAMILY differs is the cause."""
        families = {name: info["env"].get("NCCL_SOCKET_FAMILY") for name, info in self.hosts.items()}
        setters = sorted(name for name, value in families.items() if value and value != families.get(finding["host"]))
        _to_the_one_culprit(finding, setters, lambda setter, reporter: (
            f"; {setter} sets NCCL_SOCKET_FAMILY={families[setter]} while {reporter} "
            f"{'sets ' + families[reporter] if families.get(reporter) else 'does not'}: its addresses are of a family "
            "the others cannot reach"))

    def _rank(self, finding: dict, host, label, source) -> Optional[int]:
        """The rank a finding's line belongs to: its label, its NCCL pid, its torchrun report, its file."""
        if finding.get("rank") is not None:
            return finding["rank"]
        if finding.get("_rank") is not None:
            return finding["_rank"]
        if label:
            match = _LABEL_RANK.match(label)
            if match:
                return int(match.group("rank"))
            if label in self.label_pids:
                rank = self.job.pid_rank.get(self.label_pids[label])
                if rank is not None:
                    return rank
            if label.startswith("pid="):
                pid = label[4:]
                rank = self.job.pid_rank.get((self.job.pid_hosts.get(pid), pid))
                if rank is not None:
                    return rank
        if host and finding.get("_pid"):
            rank = self.job.pid_rank.get((host, finding["_pid"]))
            if rank is not None:
                return rank
        ranks = self.source_ranks.get(source)
        if ranks and len(ranks) == 1:
            return next(iter(ranks))
        return file_rank(source)

    def _place_announced(self, settle) -> None:
        """Ranks the job announced in a file (Lightning's GLOBAL_RANK line) run on that file's host; a
        Gloo timeout in a file of one rank is that rank's."""
        job = self.job
        for rank, origin in job.announced.items():
            source = origin.get("source")
            ranks = self.source_ranks.setdefault(source, set())
            if len(ranks) < 2:
                ranks.add(rank)
            host = settle(None, source)
            if rank not in job.ranks and host not in (None, UNKNOWN_HOST):
                job.ranks[rank] = {"host": host, "pid": None, "nranks": job.world}
        for timeout in job.timeouts:
            source = (timeout.get("origin") or {}).get("source")
            if timeout["rank"] is None and len(self.source_ranks.get(source, ())) == 1:
                timeout["rank"] = next(iter(self.source_ranks[source]))
            if timeout["host"] is None:
                timeout["host"] = settle(None, source)

    def _failed_rank(self, source: str) -> Optional[int]:
        """The one rank a launcher in this file reports exiting with an error code (its traceback's)."""
        pid_rank = {d["pid"]: d["rank"] for d in self.job.deaths if d.get("pid") and d.get("rank") is not None}
        ranks = {d.get("rank") if d.get("rank") is not None else pid_rank.get(d.get("pid"))
                 for d in self.job.deaths
                 if d.get("exitcode") and (d.get("origin") or {}).get("source") == source}
        return next(iter(ranks)) if len(ranks) == 1 and None not in ranks else None

    def _quiet_rank(self, host) -> Optional[int]:
        """The one rank on `host` that neither timed out in a collective nor was reported dead by its
        launcher while others did: a rank's exception that names no rank stopped that rank (a thread's
        exception, a rank left waiting), and its peers waited for it."""
        job = self.job
        on_host = {rank for rank, known in job.ranks.items() if known.get("host") == host}
        loud = {t["rank"] for t in job.timeouts} | {d.get("rank") for d in job.deaths}
        quiet = on_host - loud
        return next(iter(quiet)) if job.timeouts and len(on_host) > 1 and len(quiet) == 1 else None

    def _first_exit(self) -> Optional[int]:
        """The rank a launcher reported exiting with an error first ("srun: error: gpu-b: task 6: Exited with
        exit code 1" before the others), where one launcher's output holds every such report: the one rank's
        traceback that names no rank is that rank's."""
        exits = [d for d in self.job.deaths if d.get("exitcode") and d.get("rank") is not None]
        sources = {(d.get("origin") or {}).get("source") for d in exits}
        if len(sources) != 1:
            return None
        return min(exits, key=lambda d: (d.get("origin") or {}).get("line") or 0)["rank"]

    def _rank_host(self, rank: int) -> Optional[str]:
        """The host a rank ran on, from NCCL's init lines or a launcher's report of its death."""
        known = self.job.ranks.get(rank)
        if known and known.get("host"):
            return known["host"]
        return next((d.get("host") or d.get("node") for d in self.job.deaths
                     if d.get("rank") == rank and (d.get("host") or d.get("node"))), None)

    def _recognised(self, findings) -> bool:
        job = self.job
        return bool(self.hosts or findings or self.dumps or self.ras_problems or self.stages.recognised
                    or self.stages.started() or job.deaths or job.timeouts or job.rendezvous or job.forensics
                    or job.init_started or job.rendezvous_done or job.ras.problems or self.loose_versions)

    def _nothing(self) -> str:
        return (f"NOTHING TO JUDGE: none of the {self.lines} line(s) is a line of NCCL, torch.distributed, "
                "torchrun, Gloo, MPI, Lightning or nccl-tests; expected a job's output with NCCL_DEBUG=INFO (or "
                "WARN), a Python traceback, a launcher's error report, or nccl-tests' output")

    def _multi_node(self) -> bool:
        return len(self.hosts) > 1 or self.nodes > 1

    def _derived(self, networks, settle, peers: bool = False) -> List[dict]:
        found = []
        physical = _physical_nics(self.hosts)
        # Without a cluster network given, the one most hosts bootstrap on shows a host that took another NIC.
        inferred = None if networks else majority_network(
            {name: next(iter(facts["bootstrap_nics"].values()))["address"]
             for name, facts in self.hosts.items() if facts["bootstrap_nics"]})
        for name, facts in self.hosts.items():
            found += nic_findings(name, facts, networks, self._multi_node() or peers, physical, inferred)
            found += transport_findings(name, _transports(facts), self.expected)
        versions = version_findings({name: list(facts["versions"].items()) for name, facts in self.hosts.items()})
        found += versions
        found += setting_findings({name: facts["env"] for name, facts in self.hosts.items()}, self.env_origins)
        runtime = {}
        for what, places in self.runtime.items():
            for where, seen in places.items():
                host = (settle(where[6:]) if where.startswith("label:") else
                        settle(None, where[7:]) if where.startswith("source:") else where)
                if host and host != UNKNOWN_HOST:
                    merged = runtime.setdefault(what, {}).setdefault(host, {})
                    for version, origin in seen.items():
                        merged.setdefault(version, origin)
        # NCCL's version string carries its CUDA: where NCCL's versions differ, nccl_version_mismatch says it.
        if versions:
            runtime.pop("CUDA", None)
        found += runtime_findings(runtime)
        return found


def _origin(line: Line, source: str) -> dict:
    text = f"{line.stamp} {line.text.strip()}" if line.stamp else line.text.strip()
    return {"evidence": text[:_EVIDENCE_CHARS], "source": source, "line": line.number, "time": line_time(line)}


def _pid(line: Line) -> Optional[str]:
    if not line.host:
        return None
    head = line.text.split(line.host + ":", 1)
    return head[1].split(":", 1)[0] if len(head) == 2 else None


def _add_nic(nics: Dict[tuple, dict], nic: dict, line: Line, source: str) -> None:
    # A dict keyed by (name, address): a log listing thousands of NICs stays linear.
    key = (nic["name"], nic.get("address"))
    if key not in nics:
        nics[key] = dict(nic, origin=_origin(line, source))


def _transports(facts: dict) -> List[tuple]:
    """[(transport, origin)]: from "Using network"/channel lines, else implied by the NICs listed."""
    if facts["nets"]:
        # The last net is the one in use; the others, in order, may still show a fallback.
        nets = [net for net in facts["nets"] if net != facts["net"]] + [facts["net"]]
        return [(_transport(net, facts["ofi"]), facts["nets"][net]) for net in nets]
    if facts["net_nics"]:
        # No "Using network" line (NCCL before 2.5, or a cut log): go by the last NIC listing.
        nic = list(facts["net_nics"].values())[-1]
        kind = {"Socket": "Socket", "OFI": "OFI"}.get(nic["kind"], "IB")
        return [(_transport(kind, facts["ofi"]), nic["origin"])]
    return []


def _transport(net: str, providers: List[str]) -> str:
    net = net.strip()
    if net == "Socket":
        return "Socket"
    if net.startswith("IB"):
        return "IB"  # IB, and the IBext plugins (HPC-X, SHARP)
    if "Libfabric" in net or net.startswith("OFI"):
        provider = providers[-1] if providers else ""
        if provider.startswith("efa"):
            return "OFI(EFA)"
        return f"OFI({provider})" if provider else "OFI"
    return net


def _public(facts: dict) -> dict:
    transports = _transports(facts)
    return {
        "bootstrap_nics": [_without_origin(nic) for nic in facts["bootstrap_nics"].values()],
        "net_nics": [_without_origin(nic) for nic in facts["net_nics"].values()],
        "transport": transports[-1][0] if transports else None,
        "nccl_versions": list(facts["versions"]),
        "env": dict(facts["env"]),
        "gpudirect_rdma": gpudirect_rdma(facts["channels"]),
    }


def gpudirect_rdma(channels: dict) -> Optional[str]:
    """What NCCL's channel lines say of GPUDirect RDMA between hosts: "in use" (every NET channel),
    "partly" (some), "not in use" (data staged through host memory), None (no NET channel line)."""
    gdr, staged = channels["gdr"], channels["host_memory"]
    if not gdr and not staged:
        return None
    return "in use" if not staged else "not in use" if not gdr else "partly"


def _without_origin(nic: dict) -> dict:
    return {key: value for key, value in nic.items() if key != "origin"}


def _distinct(values) -> List[str]:
    return list(dict.fromkeys(values))


PUBLIC_KEYS = ("code", "severity", "host", "rank", "evidence", "source", "line", "count", "cause", "fix",
               "consequence_of", "confidence")


def _who(finding: dict) -> str:
    rank = f"rank {finding['rank']}" if finding.get("rank") is not None else "a rank"
    host = finding.get("host")
    return f"{rank} on {host}: " if host and host != UNKNOWN_HOST else f"{rank}: "


def _physical_nics(hosts: Dict[str, dict]) -> List[str]:
    """Names of the NICs with an address that NCCL listed and that are neither loopback nor virtual."""
    names = []
    for facts in hosts.values():
        for nic in list(facts["bootstrap_nics"].values()) + list(facts["net_nics"].values()):
            name = nic.get("name", "")
            if nic.get("address") and name != "lo" and not is_virtual(name) and name not in names:
                names.append(name)
    return names


def _dedupe(findings: List[dict]) -> List[dict]:
    """One finding per (code, host, cause), keeping the first evidence and counting the rest."""
    merged: Dict[tuple, dict] = {}
    ranks: Dict[tuple, set] = {}
    for finding in findings:
        key = (finding["code"], finding["host"], finding["cause"])
        if key in merged:
            merged[key]["count"] += finding.get("count", 1)
        else:
            merged[key] = dict(finding, count=finding.get("count", 1))
        if finding.get("rank") is not None:
            ranks.setdefault(key, set()).add(finding["rank"])
    for key, finding in merged.items():
        # The same error from a line that names no rank (NCCL's own, by pid) and one that does ("[rank0]:"):
        # the rank the others name, where they agree.
        if finding.get("rank") is None and len(ranks.get(key, ())) == 1:
            finding["rank"] = next(iter(ranks[key]))
    return sorted(merged.values(), key=sort_key)


# NCCL's retry lines: "socketPollConnect: connect to 10.0.0.7<45873> returned Connection refused, retrying".
_RETRIED = re.compile(r"connect to (?P<addr>[0-9a-fA-F.:\[\]]+?)<\d+> returned (?:Connection refused|No route to host)")


def _to_the_one_culprit(finding: dict, culprits: list, why) -> None:
    """A connection failure belongs to the host that reported it, unless the logs single out one other host
    as its cause (the owner of the refusing address, the one host with a differing setting): then it is that
    host's, and the cause says why (`why(culprit, reporter)`, appended)."""
    if len(culprits) == 1 and culprits[0] != finding["host"]:
        finding.update(host=culprits[0], rank=None, cause=finding["cause"] + why(culprits[0], finding["host"]))


# The codes whose failures name a peer address that one host may be behind (its HCA, its firewall, the
# address it advertised).
COMMON_PEER_CODES = frozenset(("ib_completion_error", "gloo_connect_failed"))
_GLOO_REMOTE = re.compile(r"remote=\[([0-9a-fA-F.:]+)\]")
_GID_LOCAL = re.compile(r"localGid (\S+)")
_GID_REMOTE = re.compile(r"remoteGids ?(\S+)")


def _peer_address(finding: dict) -> Optional[str]:
    """The peer address a failure names: its rule's peer, or Gloo's "remote=[ADDRESS]:PORT"."""
    address = _address_of(finding.get("_peer"))
    if address is None and finding["code"] == "gloo_connect_failed":
        found = _GLOO_REMOTE.search(finding.get("evidence") or "")
        address = found.group(1) if found else None
    return address


def _address_of(peer) -> Optional[str]:
    """The address in a peer as NCCL writes it ("10.0.0.7<45873>", "[fe80::1]<3>"), else None."""
    found = re.match(r"\[?([0-9a-fA-F.:]+?)\]?(?:<\d+>)?$", (peer or "").strip())
    return found.group(1) if found else None


def _peer_name(peer) -> Optional[str]:
    """The host name in a peer as a line wrote it ("(name, 29500)", "name:29500"); None for an address."""
    found = re.match(r"\(?\s*([A-Za-z][\w.\-]*?)[,:]\s*\d+\)?$", (peer or "").strip())
    return found.group(1) if found else None


def _own_exception(finding: dict) -> bool:
    """A rank's own Python exception (diagnosis.exceptions): it is placed on the rank that raised it."""
    return finding["code"] in ("rank_exception", "cuda_oom") or (finding["code"] == "cuda_error" and "exception" in finding)
