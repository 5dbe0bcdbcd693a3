"""Start examples/lightning_ddp_check.py on both lab nodes through ncclkit-torchrun, and tell a hang
(processes alive, a TCP connect to a peer's public address pending) from a finished run."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPORT = re.compile(r"ncclkit-check rank=(\d+) host=\S+: all-reduced ([\d.]+) weights (-?[\d.]+)")
STARTED = re.compile(r"ncclkit-check rank=(\d+) host=\S+: starting")
READY = re.compile(r"ncclkit-check rank=(\d+) host=\S+: process group ready")


@dataclass
class Rank:
    node: str
    process: subprocess.Popen
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def start_training(lab, script: Path, profile: bool, extra_args: list[str] = ()) -> list[Rank]:
    """ncclkit-torchrun SCRIPT on node1 and node2, each logging to a file.

    profile=False runs it with NCCLKIT_PROFILE=off: the same torchrun command line (ranks, master)
    without the profile's variables, as a user who never exported NCCL_SOCKET_IFNAME would.
    """
    ranks = []
    for node in ("node1", "node2"):
        log = Path(tempfile.mkstemp(prefix=f"ncclkit-train-{node}-", suffix=".log")[1])
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "LANG": "C.UTF-8",
               "NCCLKIT_PROFILE": "on" if profile else "off", "PYTHONUNBUFFERED": "1"}
        argv = lab.command(node, ["env", "-i", *(f"{k}={v}" for k, v in env.items()),
                                  "/opt/ncclkit/bin/ncclkit-torchrun", *extra_args, str(script)])
        with log.open("wb") as stream:
            process = subprocess.Popen(argv, stdout=stream, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL)
        ranks.append(Rank(node, process, log))
    return ranks


def _descendants(pid: int) -> list[int]:
    """Every process below pid (torchrun starts its workers in sessions of their own)."""
    children: dict[int, list[int]] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as stream:
                parent = int(stream.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def stop(ranks: list[Rank]) -> None:
    for rank in ranks:
        for pid in [*_descendants(rank.process.pid), rank.process.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        rank.process.wait(timeout=30)


def _matches(pattern: re.Pattern, ranks: list[Rank]) -> set[int]:
    return {int(m.group(1)) for rank in ranks for m in pattern.finditer(rank.output())}


def syn_sent_to(lab, node: str) -> list[str]:
    """Remote addresses of this node's TCP connects that got no answer yet."""
    done = lab.exec(node, ["ss", "-Htn", "state", "syn-sent"], capture_output=True, text=True, timeout=30)
    return [line.split()[-1].rsplit(":", 1)[0] for line in done.stdout.splitlines() if line.strip()]


@dataclass
class Hang:
    seconds: float
    still_running: bool
    finished: bool
    pending_to: list[str] = field(default_factory=list)
    started_ranks: set[int] = field(default_factory=set)
    ready_ranks: set[int] = field(default_factory=set)
    outputs: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        return (f"after {self.seconds:.1f} s: running={self.still_running} pending={self.pending_to} "
                f"started={self.started_ranks} ready={self.ready_ranks}\n"
                + "\n".join(f"--- {node}\n{text[-2500:]}" for node, text in self.outputs.items()))


def wait_for_hang(lab, ranks: list[Rank], peers_public: dict, limit_s: float, hold_s: float = 3) -> Hang:
    """Watch until a connect to a peer's public address has been pending for hold_s (then stop the
    ranks), or a rank exits, or limit_s passes."""
    started = time.monotonic()
    seen_since = None
    pending: list[str] = []
    try:
        while time.monotonic() - started < limit_s:
            if any(rank.process.poll() is not None for rank in ranks):
                break
            pending = [address for rank in ranks for address in syn_sent_to(lab, rank.node)
                       if address in peers_public.values() and address != peers_public[rank.node]]
            if pending and _matches(STARTED, ranks) == {0, 1}:
                seen_since = seen_since or time.monotonic()
                if time.monotonic() - seen_since >= hold_s:
                    break
            else:
                seen_since = None
            time.sleep(0.5)
        running = all(rank.process.poll() is None for rank in ranks)
        return Hang(seconds=time.monotonic() - started, still_running=running,
                    finished=bool(_matches(REPORT, ranks)), pending_to=sorted(set(pending)),
                    started_ranks=_matches(STARTED, ranks), ready_ranks=_matches(READY, ranks),
                    outputs={rank.node: rank.output() for rank in ranks})
    finally:
        stop(ranks)
        for rank in ranks:
            rank.log.unlink(missing_ok=True)


@dataclass
class Training:
    seconds: float
    return_codes: list
    reports: dict = field(default_factory=dict)
    outputs: dict = field(default_factory=dict)

    def describe(self) -> str:
        return (f"after {self.seconds:.1f} s: exit codes {self.return_codes}, reports {self.reports}\n"
                + "\n".join(f"--- {node}\n{text[-2500:]}" for node, text in self.outputs.items()))


def wait_for_training(ranks: list[Rank], limit_s: float, grace_s: float = 15) -> Training:
    """Wait until every rank has exited, or limit_s passes; once one rank fails, the others get
    grace_s to follow (a peer of a dead rank would otherwise wait out its collective timeout)."""
    started = time.monotonic()
    deadline = started + limit_s
    try:
        while time.monotonic() < deadline:
            codes = [rank.process.poll() for rank in ranks]
            if None not in codes:
                break
            if any(code not in (None, 0) for code in codes):
                deadline = min(deadline, time.monotonic() + grace_s)
            time.sleep(0.2)
        reports = {int(m.group(1)): {"sum": float(m.group(2)), "weights": m.group(3)}
                   for rank in ranks for m in REPORT.finditer(rank.output())}
        return Training(seconds=time.monotonic() - started,
                        return_codes=[rank.process.poll() for rank in ranks], reports=reports,
                        outputs={rank.node: rank.output() for rank in ranks})
    finally:
        stop(ranks)
        for rank in ranks:
            rank.log.unlink(missing_ok=True)
