"""Naming what went wrong: the run folder's files (one log per host, the forensics launch took, the
Flight Recorder dumps) read by the same diagnosis engine as `ncclkit diagnose`, and launch's own
findings where the engine has nothing to go on (a script missing, a timeout, processes left).
"""

from __future__ import annotations

from pathlib import Path

from ansible_collections.ncclkit.cluster.plugins.module_utils.common.findings import finding
from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.exceptions import Tracebacks
from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.forensics import PREFIX
from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.lines import parse_line
from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.log import NcclLogError, read_nccl_log_files
from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.root_cause import FIX_COLLECTIVE, FIX_FAILED

DEATH_CODES = ("rank_exception", "rank_failed", "rank_killed", "cuda_oom", "oom_killed")
_STOPPED = {"T": "stopped (SIGSTOP, a debugger or Ctrl-Z)", "t": "stopped by a tracer",
            "D": "in an uninterruptible wait (I/O or the driver)", "Z": "a zombie (exited, not reaped)"}


class TracebackTracker:
    """Per rank, the exception its last traceback ended with, quoted as the rank printed it: the
    diagnosis engine's own traceback reader (diagnosis.exceptions) fed line by line as the job runs."""

    def __init__(self):
        self._reader = Tracebacks()
        self.last: dict = {}

    def add(self, key, text: str) -> None:
        found = self._reader.feed(parse_line(0, text), repr(key))
        if found:
            self.last[key] = found["exception"]


def forensics_lines(samples: dict, stall: dict | None) -> list[str]:
    """The latest sample of every host as `ncclkit-forensics:` lines (what diagnosis.job reads)."""
    lines = []
    if stall:
        lines.append(f"{PREFIX} launch: no rank moved for {stall['seconds']} s; waiting in a collective: "
                     f"rank(s) {', '.join(map(str, stall['waiting'])) or 'none seen'}")
    for host, sample in samples.items():
        for item in sample.get("ranks", []):
            state = item["state"]
            lines.append(f"{PREFIX} rank={item['rank']} host={host} pid={item['pid']} state={state} "
                         f"({_STOPPED.get(state, 'running or sleeping')}) wchan={item.get('wchan', '-')} "
                         f"comm={item.get('comm', '?')}")
            for frame in item.get("stack") or []:
                lines.append(f"{PREFIX} py-spy rank={item['rank']}: {frame}")
        lines.extend(f"{PREFIX} ras: {line}" for line in sample.get("ras", []))
    return lines


def diagnose(paths: list[Path], file_hosts: dict | None = None) -> dict | None:
    """The engine's result for the run folder's files, or None when there is nothing to read.
    file_hosts: {path: inventory host} of the logs per host, for lines that name no machine."""
    readable = [str(path) for path in paths if path.is_file() and path.stat().st_size > 0]
    if not readable:
        return None
    try:
        return read_nccl_log_files(readable, file_hosts={str(path): host for path, host in (file_hosts or {}).items()})
    except NcclLogError:
        return None


def on_inventory_host(item: dict, hosts_of_rank: dict) -> dict:
    """The finding with its host named as the inventory names it (the logs name the machine, which
    simulated hosts share), the machine's name kept as `machine`."""
    host = hosts_of_rank.get(item.get("rank"))
    if host and host != item.get("host"):
        return dict(item, host=host, machine=item.get("host"))
    return item


def failure_finding(result: dict | None, failed: dict, exceptions: dict, hosts_of_rank: dict) -> dict:
    """The root cause of a rank's failure. `failed`: {host, rc, rank?} of the launcher (or its line
    `failed (exitcode: N) local_rank: L (pid: P)`) that reported it first: that rank's own death is the
    root cause, and a peer that died afterwards of the lost connection (Gloo's "Connection closed by
    peer") follows from it. The engine's finding for it wins, with the rank's exception quoted when the
    engine names none; else launch's own."""
    host, code, rank = failed["host"], failed["rc"], failed.get("rank")
    deaths = [on_inventory_host(f, hosts_of_rank) for f in (result or {}).get("findings", [])
              if f["severity"] == "error" and f["code"] in DEATH_CODES]
    first = next((f for f in deaths if f.get("host") == host and (rank is None or f.get("rank") == rank)), None)
    if first is None and rank is None:
        first = _first_error(result)
        first = on_inventory_host(first, hosts_of_rank) if first else None
    quote = exceptions.get((host, rank)) if rank is not None else _only(exceptions, host)
    if first:
        first = dict(first, consequence_of=None)
        quote = exceptions.get((first.get("host"), first.get("rank"))) or quote
        if first["code"] in DEATH_CODES and quote and quote not in first["cause"]:
            first = dict(first, cause=f"{first['cause']}: {quote}")
        return first
    if rank is None:
        rank = next((r for (where, r) in exceptions if where == host), None)
    pid = f" (pid {failed['pid']})" if failed.get("pid") else ""
    return finding("rank_failed", "error", f"rank {rank if rank is not None else '?'} on {host}{pid} exited with code "
                   f"{code}" + (f": {quote}" if quote else ""), FIX_FAILED, host=host, rank=rank,
                   evidence=[failed["line"]] if failed.get("line") else [])


def hang_finding(result: dict | None, stall: dict, hosts_of_rank: dict) -> dict:
    """A named hang: the engine's `hang_in_collective` when the forensics show a stopped rank, else
    launch's own from the stacks (a rank outside the collective the others wait in)."""
    first = _first_error(result)
    if first and first["code"] == "hang_in_collective" and first.get("rank") is not None:
        return dict(on_inventory_host(first, hosts_of_rank), launch_seconds_without_progress=stall["seconds"])
    named = stall["suspects"][0] if stall["suspects"] else None
    if named:
        where = _STOPPED.get(named["state"], f"elsewhere: {named['where']}")
        cause = (f"hang: no rank moved for {stall['seconds']} s; suspect: rank {named['rank']} on {named['host']} "
                 f"(pid {named['pid']}) is {where} while rank(s) {', '.join(map(str, stall['waiting'])) or '?'} "
                 "wait in a collective")
        return finding("hang_in_collective", "error", cause, FIX_COLLECTIVE, host=named["host"], rank=named["rank"],
                       launch_seconds_without_progress=stall["seconds"])
    return finding("hang_in_collective", "error",
                   f"hang: no rank moved for {stall['seconds']} s and every rank waits in a collective: the ranks "
                   "may disagree on the collective (a data-dependent branch, uneven batches)", FIX_COLLECTIVE,
                   confidence="low", launch_seconds_without_progress=stall["seconds"])


def _first_error(result: dict | None) -> dict | None:
    if not result:
        return None
    return next((f for f in result["findings"] if f["severity"] == "error" and not f.get("consequence_of")), None)


def _only(exceptions: dict, host) -> str | None:
    """The exception a rank of `host` raised (one seen in a rank's own prefixed lines first)."""
    quotes = sorted((rank is None, quote) for (where, rank), quote in exceptions.items() if where == host)
    return quotes[0][1] if quotes else None
