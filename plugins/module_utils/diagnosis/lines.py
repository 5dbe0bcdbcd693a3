"""Turn raw log input into lines, and read the parts of one line NCCL diagnosis needs.

Pure Python 3.8+ standard library: the nccl_diagnose module and the ncclkit package share it.

A line may carry, before the text NCCL or torch wrote, a timestamp in any
NCCL_DEBUG_TIMESTAMP_FORMAT, a launcher label (mpirun --tag-output "[1,0]<stdout>:", torchrun
"[rank0]:", MPICH "[0] "), or colour codes. So the NCCL prefix "host:pid:tid [dev]" is searched
anywhere in the line instead of being anchored at its start.
"""

from __future__ import annotations

import ipaddress
import re
from typing import List, NamedTuple, Optional, Tuple

from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests.lines import NCCL_VERSION, TEST_FAILURE, device_row

MAX_BYTES = 64 * 1024 * 1024       # text given in memory (the module's content)
MAX_FILE_BYTES = 4 * 1024 ** 3     # files, read line by line: a bound against endless streams only
_CHUNK = 1 << 20
# Longer lines are not NCCL lines; cutting them keeps every pattern linear in the input.
MAX_LINE = 8192
_BINARY_SAMPLE = 64 * 1024

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# What may stand before the text a program wrote, possibly several in a row: launcher labels
# (mpirun --tag-output "[1,0]<stdout>:", horovodrun's "[0]<stdout>:", torchrun "[rank0]:" and "[default0]:",
# MPICH "[0] ", srun --label "0: ", pdsh "node1: ", Ray "(RayTrainWorker pid=812, ip=10.0.0.2)", kubectl
# --prefix "[pod/x/c]", vLLM's logger "ERROR 08-21 11:38:14 [core.py:700] ", a log service's "ERROR <ISO stamp>
# [resource.labels.taskName: x] "), timestamps (NCCL's
# "[2025-10-16 22:16:08]", ISO-8601 ones of log collectors with their "|" columns and CRI's "stdout F",
# syslog's "Dec  5 04:47:09 host kernel:", dmesg's "[ 123.456]"), and colour codes whose escape
# character was lost on the way ("[0m ").
_STAMP = r"\d{4}-\d\d-\d\d[ T_]\d\d:\d\d:\d\d(?:[.,]\d+)?(?: ?(?:Z|[+-]\d\d:?\d\d|UTC))?"
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MONTH_SET = frozenset(_MONTHS)
_LABEL = re.compile(
    r"\s*(?:\[(?P<mpi>\d+,\d+)\]<(?:stdout|stderr)>: ?|\[(?P<hvd>\d+)\]<(?:stdout|stderr)>: ?"
    r"|\[(?P<torch>rank\d+)\]: ?|\[(?P<default>default\d+)\]: ?"
    r"|\[(?P<idx>\d+)\] |\[(?P<colour>[0-9;]*)m ?"
    r"|\[(?P<bstamp>" + _STAMP + r")\] ?"
    r"|(?P<stamp>" + _STAMP + r")(?: *\| *| +(?:stdout|stderr) [FP] | +)"
    r"|\| +"
    r"|\((?:\w+ )?pid=(?P<ray>\d+)(?:, ip=(?P<rayip>[\d.]+))?\) "
    r"|\[(?P<kube>pod/[^\]\s]+)\] "
    r"|(?:ERROR|WARNING|INFO|DEBUG|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[[\w.\-]+:\d+\] "   # vLLM's logger
    # a log service's export: its severity before an ISO stamp, its resource labels after it
    r"|(?:DEFAULT|DEBUG|INFO|NOTICE|WARNING|ERROR|CRITICAL) (?=\d{4}-\d\d-\d\dT)"
    r"|\[resource\.labels\.[\w.]+: [^\]\s]+\] "
    r"|\[ *\d+\.\d+\] "
    r"|(?P<syslog>(?:" + "|".join(_MONTHS) + r") [ \d]\d \d\d:\d\d:\d\d) (?P<sysloghost>[\w.\-]+) "
    r"[\w./\-]+(?:\[\d+\])?: "
    r"|(?P<srun>\d+): "                                                   # srun --label
    # pdsh/clush: "node1: " (a name with a digit; not a program's own "rank1:", "epoch3:", "step10:")
    r"|(?P<pdsh>(?!rank|epoch|step|iter|batch|layer|cuda)[a-z][a-z0-9\-]*\d[a-z0-9.\-]*|\d+\.\d+\.\d+\.\d+)"
    r": (?!Test ))")
# All the prefixes of a line in one match; what they say is read once per distinct prefix (a file
# repeats a few: its ranks' labels, the stamp of the current second).
_PREFIXES = re.compile(r"(?:" + _LABEL.pattern + r")+")
_PREFIX_CACHE: dict = {}
_PREFIX_CACHE_SIZE = 4096
# A line that may carry such a prefix starts with one of these (or with a month's name, or a log level's
# word: vLLM's logger, a log service's export).
_PREFIX_STARTS = frozenset("[ \t(|0123456789")
_LEVEL_STARTS = frozenset(("ERROR ", "WARNIN", "INFO 0", "INFO 1", "INFO 2", "DEBUG ", "CRITIC", "DEFAUL", "NOTICE"))
# "host:pid:tid [dev] [seconds] [file.cc:123] NCCL LEVEL message" (2.12 to 2.30; TRACE adds seconds;
# before 2.5 without the word NCCL: "host:pid:tid [0] INFO ...", "... include/socket.h:360 WARN ...").
# The look-behind lets a match start only where a host name can start, which keeps it linear.
NCCL_LINE = re.compile(
    r"(?<![\w.\-<>])(?P<host>[\w.\-<>]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>-?\d+)\] "
    r"(?:\d+\.\d+ )?(?:(?P<where>\S+:\d+) )?(?:NCCL )?(?P<level>INFO|WARN|TRACE|ABORT)\b ?(?P<msg>.*)")
# The same without the "host:pid:tid [dev]" prefix (NCCL_DEBUG_FILE or a launcher that cut it, Kubeflow's
# "[3] include/shm.h:28 NCCL WARN ..."): the level and message only.
NCCL_BARE = re.compile(r"(?:^|(?<=\s))(?:(?P<where>\S+:\d+) )?NCCL (?P<level>INFO|WARN|TRACE|ABORT)\b ?(?P<msg>.*)")
_NNODES = re.compile(r"\bnNodes (?P<n>\d+)")
# The name only: the value is the rest of the line, trimmed in Python (a lazy ".*?" before "\.?\s*$"
# backtracks over every run of spaces, quadratic on a long line).
_ENV = re.compile(r"^(?P<name>[A-Z][A-Z0-9_]+) set by environment to ")
_BOOTSTRAP = re.compile(r"^Bootstrap ?: Using (?P<list>.+)$")
_NET_SOCKET = re.compile(r"^NET/Socket ?: Using (?P<list>.+)$")
_NET_IB = re.compile(r"^NET/IB ?: Using (?P<list>.+)$")
_IB_DEVICE = re.compile(r"\[\d+\](?P<name>[^\s:\[\]]+):(?P<port>\d+)/(?P<link>\w+)")
_OFI = re.compile(r"^NET/OFI Selected [Pp]rovider is (?P<provider>[^,\s(]+)")
_NETWORK = re.compile(r"^Using network (?P<net>\S.*)")
_CHANNEL_NET = re.compile(r"\bvia NET/(?P<net>[^/\s][^/]*)/")
_CHANNEL_GDR = re.compile(r"\bvia NET/[^/\s][^/]*/\d+(?P<gdr>/GDRDMA)?")


class NcclLogError(ValueError):
    """The input cannot be read as a log (wrong type, too large, binary); the message says why."""


class Line(NamedTuple):
    number: int
    text: str             # the line without colour codes and launcher labels
    label: Optional[str]  # launcher label ("1,0", "rank0", "0") naming the process, if any
    host: Optional[str]   # host from the NCCL prefix, if the line has one
    level: Optional[str]  # NCCL level: INFO, WARN, TRACE, ABORT
    msg: str              # NCCL message after the prefix, else the text
    stamp: Optional[str] = None  # the timestamp a prefix carried (diagnosis.timeline reads it)


def decode(data, source: str, max_bytes: int = MAX_BYTES) -> Tuple[str, List[str]]:
    """Return (text, notes) from str or bytes; raise NcclLogError for unusable input."""
    if isinstance(data, str):
        if len(data) > max_bytes:
            raise NcclLogError(_too_large(source, len(data), max_bytes))
        return data.replace("\x00", ""), []
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise NcclLogError(f"{source}: expected text or bytes, got {type(data).__name__}")
    raw = bytes(data)
    if len(raw) > max_bytes:
        raise NcclLogError(_too_large(source, len(raw), max_bytes))
    # Zero padding (a log file cut short by a crash) is not binary content.
    raw = raw.replace(b"\x00", b"")
    if _looks_binary(raw[:_BINARY_SAMPLE]):
        raise NcclLogError(f"{source}: looks like a binary file, not a text log")
    try:
        return raw.decode("utf-8"), []
    except UnicodeDecodeError:
        text = raw.decode("utf-8", errors="replace")
        bad = text.count("\ufffd") - raw.decode("utf-8", errors="ignore").count("\ufffd")
        return text, [f"{source}: not valid UTF-8; {bad} undecodable byte sequence(s) were replaced with U+FFFD"]


def _too_large(source, size, max_bytes):
    return (f"{source}: {size / 1048576:.1f} MiB is over the {max_bytes // 1048576} MiB limit; "
            "pass the part around the failure (e.g. `tail -c 32M`)")


def _looks_binary(sample: bytes) -> bool:
    # Text logs have almost no control characters and decode as UTF-8 (or nearly so).
    if not sample:
        return False
    text = sample.decode("utf-8", errors="replace")
    odd = sum(1 for ch in text if ch == "\ufffd" or (ch < " " and ch not in "\t\n\r\f\v\x1b"))
    return odd > 0.3 * len(text)


class StreamReader:
    """A binary stream read in chunks into Line records, with memory bounded by the chunk size.

    head() is the first bytes (for sniffing pickles and JSON); lines() then yields every line,
    undecodable bytes replaced (and counted in notes); rest() is the whole content as bytes instead.
    """

    def __init__(self, handle, source: str, max_bytes: int):
        self.handle, self.source, self.max_bytes = handle, source, max_bytes
        self.size = 0
        self.bad = 0  # lines with undecodable bytes
        self.notes: List[str] = []
        self._head = None
        self._cr = False  # whether the text decoded last holds a carriage return

    def _read(self, count: int) -> bytes:
        data = self.handle.read(count)
        if not isinstance(data, bytes):
            raise NcclLogError(f"{self.source}: expected a binary stream")
        self.size += len(data)
        if self.size > self.max_bytes:
            raise NcclLogError(_too_large(self.source, self.size, self.max_bytes))
        return data

    def head(self) -> bytes:
        if self._head is None:
            self._head = self._read(_BINARY_SAMPLE)
        return self._head

    def empty(self) -> bool:
        """Whether the stream holds nothing but whitespace and zero padding (reads it to know)."""
        head = self.head()
        while not head.strip(b"\x00 \t\r\n"):
            more = self._read(_BINARY_SAMPLE)
            if not more:
                return True
            head = self._head = more  # whitespace before it carries no line worth a number
        return False

    def rest(self) -> bytes:
        chunks = [self.head()]
        while True:
            chunk = self._read(_CHUNK)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)

    def lines(self):
        for batch in self.batches():
            yield from batch

    def batches(self):
        """The Line records of each chunk read, as a list: the per-line work stays in list comprehensions."""
        head = self.head()
        if _looks_binary(head.replace(b"\x00", b"")):
            raise NcclLogError(f"{self.source}: looks like a binary file, not a text log")
        number, pending, chunk = 0, b"", head
        while chunk:
            data = pending + chunk
            cut = data.rfind(b"\n")
            # A line is cut at MAX_LINE characters anyway: an endless one is not kept whole.
            pending = data[cut + 1:][:MAX_LINE * 4]
            if cut >= 0:
                texts = self._pieces(self._decode(data[:cut]))
                yield [parse_line(index, text) for index, text in enumerate(texts, start=number + 1)]
                number += len(texts)
            chunk = self._read(_CHUNK)
        if pending:
            texts = self._pieces([piece for text in self._decode(pending) for piece in text.splitlines()])
            yield [parse_line(index, text) for index, text in enumerate(texts, start=number + 1)]
        if self.bad:
            self.notes.append(f"{self.source}: not valid UTF-8; {self.bad} line(s) had undecodable bytes replaced "
                              "with U+FFFD")

    def _pieces(self, texts: List[str]) -> List[str]:
        # Bare carriage returns (progress bars) break lines as str.splitlines() does, so that a file
        # read in chunks numbers its lines as the same text in memory; long lines are cut.
        if self._cr:
            texts = [piece for text in texts for piece in ((text.splitlines() or [""]) if "\r" in text else (text,))]
        if texts and max(map(len, texts)) > MAX_LINE:
            texts = [text[:MAX_LINE] for text in texts]
        return texts

    def _decode(self, body: bytes) -> List[str]:
        """The lines of a run of whole lines; decoded in one call unless some line is not UTF-8."""
        if b"\x00" in body:
            body = body.replace(b"\x00", b"")  # zero padding from a crash, dropped before decoding as decode() does
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            texts = []
            for raw in body.split(b"\n"):
                try:
                    texts.append(raw.decode("utf-8"))
                except UnicodeDecodeError:
                    texts.append(raw.decode("utf-8", errors="replace"))
                    self.bad += 1
            text = "\n".join(texts)
        self._cr = "\r" in text
        return text.split("\n")


def split_lines(text: str):
    """Yield Line records, numbered from 1."""
    for number, raw in enumerate(text.splitlines(), start=1):
        yield parse_line(number, raw[:MAX_LINE])


# Line records are built by tuple's own constructor: NamedTuple's __new__ is a Python function, and
# this runs once per line of logs of several GB.
_new = tuple.__new__


def parse_line(number: int, raw: str) -> Line:
    text = ANSI.sub("", raw) if "\x1b" in raw else raw
    nccl = "NCCL" in text
    if nccl:
        # Most NCCL lines start with their prefix: an anchored match, before any other work, is the fast path.
        match = NCCL_LINE.match(text)
        if match:
            host, level, msg = match.group("host", "level", "msg")
            return _new(Line, (number, text, None, host, level, msg.strip(), None))
    label = stamp = syslog_host = None
    first = text[:1]
    if first in _PREFIX_STARTS or (text[:3] in _MONTH_SET and text[3:4] == " ") or text[:6] in _LEVEL_STARTS or (
            # pdsh/clush's "node1: ": the first space follows a colon (an NCCL line's follows its tid)
            first.islower() and text.find(": ", 1, 64) == text.find(" ", 1, 64) - 1 > 0):
        match = _PREFIXES.match(text)
        if match and match.end():
            prefix = text[:match.end()]
            known = _PREFIX_CACHE.get(prefix)
            if known is None:
                if len(_PREFIX_CACHE) >= _PREFIX_CACHE_SIZE:
                    _PREFIX_CACHE.clear()
                label, stamp, syslog_host, rest = _strip_prefixes(prefix)
                known = _PREFIX_CACHE[prefix] = (label, stamp, syslog_host, len(prefix) - len(rest))
            label, stamp, syslog_host, used = known
            text = text[used:]
    if nccl or "] INFO " in text or " WARN " in text:
        match = NCCL_LINE.match(text) or NCCL_LINE.search(text)
        if match:
            host, level, msg = match.group("host", "level", "msg")
            return _new(Line, (number, text, label, host, level, msg.strip(), stamp))
        match = NCCL_BARE.search(text) if nccl else None
        if match:
            fields = (number, text, label, syslog_host, match.group("level"), match.group("msg").strip(), stamp)
            return _new(Line, fields)
    match = TEST_FAILURE.search(text) if "Test " in text else None
    host = match.group("host") if match else syslog_host
    return _new(Line, (number, text, label, host, None, text.strip(), stamp))


# Launcher labels, the most specific first (a torchrun "[rank3]:" inside mpirun's "[1,3]<stdout>:"
# names the same process); colour codes are no label.
_LABEL_KINDS = {"mpi": 0, "hvd": 0, "torch": 1, "default": 2, "ray": 3, "rayip": 3, "kube": 4, "idx": 5, "srun": 5}


def _strip_prefixes(text: str) -> Tuple[Optional[str], Optional[str], Optional[str], str]:
    """(label, timestamp, syslog host, the text after every prefix)."""
    label = stamp = host = None
    specific = len(_LABEL_KINDS)
    position = 0
    while True:
        match = _LABEL.match(text, position)
        if not match or match.end() == position:
            break
        kind = match.lastgroup  # each alternative's value group closes last
        if kind == "srun" and label is not None:
            break  # srun's "0: " is outermost: after another launcher's label it is the program's text
        position = match.end()
        if kind is None or kind == "colour":
            continue
        if kind in _LABEL_KINDS:
            if kind == "rayip":  # Ray names the worker's node by its address: the line's host, where none else
                host = host or match.group("rayip")
            if _LABEL_KINDS[kind] < specific:
                specific = _LABEL_KINDS[kind]
                label = "pid=" + match.group("ray") if kind in ("ray", "rayip") else match.group(kind)
        elif kind == "pdsh":
            host = host or match.group("pdsh")
        elif stamp is None:
            if kind == "bstamp":
                stamp = f"[{match.group('bstamp')}]"
            elif kind == "sysloghost":
                stamp, host = match.group("syslog"), match.group("sysloghost")
            else:
                stamp = match.group(kind)
    return label, stamp, host, text[position:] if position else text


def _strip_labels(text: str) -> Tuple[Optional[str], str]:
    label, dummy, dummy, text = _strip_prefixes(text)
    return label, text


# ---- facts carried by single lines ----

def nccl_version(line: Line) -> Optional[str]:
    if "NCCL version" not in line.text:
        return None
    # NCCL before 2.9 printed its version without the prefix, on rank 0 only.
    match = NCCL_VERSION.search(line.msg) if line.level else NCCL_VERSION.match(line.text.lstrip())
    return match.group("version") if match else None


def device_row_host(line: Line) -> Optional[str]:
    match = device_row(line.text) if line.text.startswith("#") else None
    return match.group("host") if match else None


def node_count(line: Line) -> Optional[int]:
    match = _NNODES.search(line.msg) if line.level and "nNodes" in line.msg else None
    return int(match.group("n")) if match else None


def env_setting(line: Line) -> Optional[Tuple[str, str]]:
    match = _ENV.match(line.msg) if line.level and "set by environment" in line.msg else None
    if not match:
        return None
    value = line.msg[match.end():].rstrip()
    return match.group("name"), value[:-1] if value.endswith(".") else value


def bootstrap_nics(line: Line) -> List[dict]:
    match = _BOOTSTRAP.match(line.msg) if line.level and line.msg.startswith("Bootstrap") else None
    return _socket_list(match.group("list")) if match else []


def net_nics(line: Line) -> List[dict]:
    """NICs from "NET/Socket : Using ...", "NET/IB : Using ... ; OOB ..." or "NET/OFI Selected provider"."""
    if not line.level or not line.msg.startswith("NET/"):
        return []
    match = _NET_SOCKET.match(line.msg)
    if match:
        return [dict(nic, kind="Socket") for nic in _socket_list(match.group("list"))]
    match = _NET_IB.match(line.msg)
    if match:
        devices, dummy, oob = match.group("list").partition(";")
        nics = [{"name": f"{m.group('name')}:{m.group('port')}", "kind": m.group("link")}
                for m in _IB_DEVICE.finditer(devices)]
        oob = oob.strip()
        if oob.startswith("OOB"):
            nics += [dict(nic, kind="OOB") for nic in _socket_list(oob[3:])]
        return nics
    match = _OFI.match(line.msg)
    return [{"name": match.group("provider"), "kind": "OFI"}] if match else []


def network_name(line: Line) -> Optional[str]:
    """The net plugin a communicator uses: "Using network X" or a channel's "via NET/X/0"."""
    if not line.level or ("Using network" not in line.msg and "via NET/" not in line.msg):
        return None
    match = _NETWORK.match(line.msg) or _CHANNEL_NET.search(line.msg)
    return match.group("net").rstrip() if match else None


def channel_gdr(line: Line) -> Optional[bool]:
    """Whether a channel over a NET plugin uses GPUDirect RDMA ("via NET/IB/0/GDRDMA"), None when the
    line is no such channel (NCCL writes "/GDRDMA" after the device when it does, nothing when the
    data is staged through host memory)."""
    match = _CHANNEL_GDR.search(line.msg) if line.level and "via NET/" in line.msg else None
    return bool(match.group("gdr")) if match else None


def ofi_provider(line: Line) -> Optional[str]:
    match = _OFI.match(line.msg) if line.level and line.msg.startswith("NET/OFI") else None
    return match.group("provider") if match else None


def _socket_list(listing: str) -> List[dict]:
    # "[0]eth0:10.0.0.1<0> [1]veth1:fe80::1%veth1<0>" or, since 2.19, "eth0:10.0.0.1<0>".
    nics = []
    for item in listing.split():
        item = re.sub(r"^\[\d+\]", "", item)
        item = re.sub(r"<\d+>$", "", item)
        if ":" in item:
            name, address = split_name_address(item)
            nics.append({"name": name, "address": address})
    return nics


def split_name_address(item: str) -> Tuple[str, str]:
    """Split "eth0:10.0.0.1", "eno1:avahi:10.0.0.1" or "eth1:fe80::1%eth1" into name and address."""
    for index, char in enumerate(item):
        if char == ":" and parse_address(item[index + 1:]) is not None:
            return item[:index], item[index + 1:]
    name, dummy, address = item.rpartition(":")
    return name, address


def parse_address(text: str):
    """An ip_address for "10.0.0.1", "fe80::1%eth0" or "[::1]", else None."""
    text = text.strip("[]").split("%", 1)[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None
