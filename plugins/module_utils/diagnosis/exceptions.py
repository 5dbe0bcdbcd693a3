"""A rank's own Python exception: the final line of a traceback, quoted as the program wrote it.

Pure Python 3.8+ standard library. diagnosis.log feeds every line that is not NCCL's own to
Tracebacks.feed(); one traceback is read per stream (file and launcher label), so the tracebacks of
ranks interleaved in one file stay apart. The exception line is the first unindented line after
"Traceback (most recent call last):" that reads "Type: message" (also inside torchrun's error
report, whose "traceback :" field starts one).

Exceptions that only say a peer failed (a closed connection, an NCCL or Gloo error, torchrun's
ChildFailedError, a signal) are not a rank's own error: the rules of diagnosis.rules read those
lines; here they are left out, and so is an exception Python raised while handling one of them
("During handling of the above exception, another exception occurred": torchrun's shutdown after a
SIGTERM). CUDA out of memory is `cuda_oom`, also from its exception line alone (a log's last lines
pasted without the traceback); any other exception `rank_exception`.
"""

from __future__ import annotations

import re
from typing import Dict, Optional

from ansible_collections.ncclkit.cluster.plugins.module_utils.common.findings import finding

from .rules import CAUSE_FABRIC_MANAGER, FIX_FABRIC_MANAGER, FIX_GPU_FAULT, GPU_FAULT_WORDS
from .timeline import line_time

TRACEBACK = "Traceback (most recent call last)"
IGNORED = "Exception ignored in"
# Python's words between the tracebacks of a chain: the next exception was raised while handling the
# previous one (or from it), so it is that one's consequence.
CHAINED = ("During handling of the above exception", "The above exception was the direct cause")
# "ValueError: bad batch", "torch.OutOfMemoryError: CUDA out of memory. ...", "KeyError: 'x'", "AssertionError"
_EXCEPTION = re.compile(r"^(?P<type>(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure)|"
                        r"StopIteration|StopAsyncIteration))"
                        r"(?:: ?(?P<message>.*))?$")
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')
# A traceback is given up after this many lines without its exception line (a cut log).
_MAX_TRACEBACK_LINES = 400
_MESSAGE_CHARS = 400

# Exception types that report another rank's failure, a signal or the launcher, not this rank's own error.
_NOT_OWN_TYPES = ("DistBackendError", "DistNetworkError", "DistStoreError", "DistError", "ChildFailedError",
                  "SignalException", "KeyboardInterrupt", "SystemExit", "RendezvousError",
                  "RendezvousClosedError", "RendezvousTimeoutError", "RendezvousConnectionError",
                  "RendezvousStateError", "ConnectionResetError", "BrokenPipeError", "ConnectionRefusedError",
                  "ConnectionAbortedError", "TimeoutError", "CalledProcessError",
                  # a launcher signalling a process that had already gone (torchrun's shutdown races)
                  "ProcessLookupError", "ChildProcessError",
                  # Ray reporting a worker (actor) that died: the worker's own output has the cause
                  "RayActorError", "ActorDiedError", "TrainingFailedError", "WorkerGroupError")
# Words of a message that is about the communication layer (its rules say what it means). NCCL's and
# Gloo's names count as words only (ncclInternalError, ProcessGroupNCCL, .../gloo/transport/...): a path
# or a name that merely holds them (/opt/ncclkit/..., nccl-tests) is the program's own business.
_NOT_OWN_NAMES = re.compile(r"NCCL|\bnccl(?:[A-Z]|\b(?!-))|Gloo|\bgloo\b")
_NOT_OWN_WORDS = ("ProcessGroup", "Watchdog", "TCPStore", "c10d", "closed by peer",
                  "Connection reset", "Connection closed", "Broken pipe", "Socket Timeout", "timed out",
                  "Timed out", "communicator", "Rendezvous", "rendezvous", "store_based_barrier",
                  "Connection refused", "SIGTERM", "SIGKILL", "received signal", "Address already in use",
                  "EADDRINUSE", "DistBackendError", "address already in use",
                  # a worker or child process that died: its own cause (a signal, a bus error) is elsewhere
                  "exited unexpectedly", "killed by signal", "mismatch between collectives",
                  "actor died unexpectedly", "RayActorError",
                  # Horovod stopping every rank after one failed or stalled: the cause is that rank's
                  "Horovod has been shut down",
                  # torch's DataLoader re-raising a worker's error: the worker's own ("Original Traceback")
                  # follows, and is the one quoted
                  "in DataLoader worker process",
                  # torch's monitored barrier (TORCH_DISTRIBUTED_DEBUG=DETAIL) names another rank as late
                  "monitoredBarrier", "monitored_barrier",
                  # a wrapper pointing back at the real error it logged before (vLLM's EngineDeadError,
                  # "Engine core initialization failed. See root cause above.")
                  "root cause above", "(above) for the root cause")
_OOM_WORDS = ("CUDA out of memory", "OutOfMemoryError", "CUBLAS_STATUS_ALLOC_FAILED", "CUDA error: out of memory")
# The GPU or its driver refusing the rank (a busy or missing device, a driver that does not match the
# CUDA libraries): the rank's own CUDA error, a fault of the host rather than of the program.
# So are the faults the NCCL rules call the GPU's (an illegal memory access, an unspecified launch failure,
# an uncorrectable ECC error): the same words in a rank's exception. (A device-side assert, the program's
# own check failing in a kernel, stays the program's: rank_exception.)
_CUDA_WORDS = ("cudaGetDeviceCount", "CUDA driver version is insufficient", "CUDA-capable device",
               "invalid device ordinal", "No CUDA GPUs are available", "CUDA driver initialization failed",
               "unsupported display driver") + GPU_FAULT_WORDS
FIX_CUDA = ("look at that host's GPU and driver: `nvidia-smi` (a process still holding the GPU, a GPU missing, "
            "the compute mode), `dmesg -T | grep -i -e xid -e nvrm`, and that the driver matches the CUDA the job "
            "loads (error 803 and 'driver version is insufficient' mean it does not: reboot after a driver update, or "
            "load the matching libraries); the other ranks' errors follow from it")

FIX_EXCEPTION = ("fix the program where the traceback of that rank points (the last `File ..., line N` above "
                 "the exception); the errors of the other ranks (connection closed by peer, NCCL or Gloo "
                 "errors, ChildFailedError) follow from it and need no fix of their own")
FIX_OOM = ("that GPU ran out of memory in this rank: lower the batch size (or sequence length) per GPU, use "
           "gradient checkpointing or mixed precision, set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
           "against fragmentation, and check with `nvidia-smi` that no other process holds memory on that GPU")


def classify(exc_type: str, message: str) -> Optional[str]:
    """cuda_oom, cuda_not_initialized (CUDA error 802), cuda_error, rank_exception, or None for an exception
    that reports someone else's failure."""
    text = f"{exc_type}: {message}"
    if any(word in text for word in _OOM_WORDS):
        return "cuda_oom"
    if any(word in text for word in _CUDA_WORDS) and not _NOT_OWN_NAMES.search(text):
        return "cuda_not_initialized" if "system not yet initialized" in text else "cuda_error"
    if exc_type.rsplit(".", 1)[-1] in _NOT_OWN_TYPES or any(word in text for word in _NOT_OWN_WORDS) \
            or _NOT_OWN_NAMES.search(text):
        return None
    return "rank_exception"


class Tracebacks:
    """Open tracebacks per stream; feed() returns a finding when a rank's own exception line ends one."""

    def __init__(self):
        self.open: Dict[tuple, dict] = {}  # (source, label, host) -> {lines, frame, time, ignored}
        self.ignored: Dict[tuple, bool] = {}  # streams whose next traceback Python said it ignored
        self.last_own: Dict[tuple, bool] = {}  # stream -> whether its last traceback was the rank's own error
        self.chained: Dict[tuple, bool] = {}  # streams whose next traceback follows one that was not

    def feed(self, line, source: str) -> Optional[dict]:
        text = line.text
        key = (source, line.label, line.host)
        if TRACEBACK in text:
            self.open[key] = {"lines": 0, "frame": None, "time": line_time(line),
                              "ignored": self.ignored.pop(key, False) or self.chained.pop(key, False)}
            return None
        if key not in self.open and key in self.last_own and text.lstrip().startswith(CHAINED):
            # "During handling of the above exception, another exception occurred:" after an
            # exception that was not the rank's own (a signal, a peer's error): neither is the next.
            self.chained[key] = not self.last_own.pop(key)
            return None
        if IGNORED in text:
            # Python's "Exception ignored in: <function ...__del__>": a traceback at shutdown that
            # changed nothing (a DataLoader worker's, a finalizer's).
            self.ignored[key] = True
            return None
        state = self.open.get(key)
        if state is None:
            return self._alone(line) if "CUDA out of memory" in text else None
        state["lines"] += 1
        if state["lines"] > _MAX_TRACEBACK_LINES:
            del self.open[key]
            return None
        stripped = text.strip()
        if not stripped or stripped[:1] in ("^", "~", "+", "|"):
            return None
        if text[:1] in (" ", "\t"):
            # Frames and code are indented; so is the exception line inside torchrun's error report.
            frame = _FRAME.match(text) if stripped.startswith("File ") else None
            if frame:
                state["frame"] = f"{frame.group('file')}:{frame.group('line')} in {frame.group('func')}"
                return None
            if not state["frame"] or ":" not in stripped or stripped.startswith("File "):
                return None
        if stripped.startswith(("The above exception", "During handling of")):
            return None
        match = _EXCEPTION.match(stripped)
        if not match:
            return None  # another process's line in between: the traceback goes on
        del self.open[key]
        exc_type, message = match.group("type"), (match.group("message") or "").strip()
        code = None if state["ignored"] else classify(exc_type, message)
        self.last_own[key] = code is not None
        if code is None:
            return None
        made = exception_finding(code, exc_type, message, state["frame"])
        made["time"] = line_time(line) or state["time"]  # the traceback's start, when only it has a stamp
        return made

    @staticmethod
    def _alone(line) -> Optional[dict]:
        """A CUDA OOM exception line without its traceback (the last lines of a log, pasted): the
        exception alone says whose error it is."""
        match = _EXCEPTION.match(line.text.strip())
        if not match or classify(match.group("type"), match.group("message") or "") != "cuda_oom":
            return None
        made = exception_finding("cuda_oom", match.group("type"), (match.group("message") or "").strip(), None)
        made["time"] = line_time(line)
        return made


def exception_finding(code: str, exc_type: str, message: str, frame: Optional[str]) -> dict:
    quoted = f"{exc_type}: {message[:_MESSAGE_CHARS]}" if message else exc_type
    where = f" (raised at {frame})" if frame else ""
    if code == "cuda_oom":
        return finding("cuda_oom", "error", f"CUDA out of memory in a rank{where}: {quoted}", FIX_OOM,
                       exception=quoted)
    if code == "cuda_not_initialized":
        return dict(finding(code, "error", f"CUDA reports 'system not yet initialized' (error 802) in the rank's own "
                                           f"Python exception{where}: {quoted}: {CAUSE_FABRIC_MANAGER}",
                            FIX_FABRIC_MANAGER, exception=quoted), _own=True)
    if code == "cuda_error":
        fix = FIX_GPU_FAULT if any(word in message for word in GPU_FAULT_WORDS) else FIX_CUDA
        return dict(finding("cuda_error", "error", f"a CUDA error in the rank's own Python exception{where}: {quoted}",
                            fix, exception=quoted), _own=True)
    return finding("rank_exception", "error", f"the rank's own Python exception{where}: {quoted}", FIX_EXCEPTION,
                   exception=quoted)
