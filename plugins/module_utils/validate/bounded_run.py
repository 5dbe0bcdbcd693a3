"""Run a command with a deadline, and when the deadline passes take the hang's evidence BEFORE
killing it: every rank's process state, wait channel and Python stack, and NCCL's RAS report
(diagnosis.forensics). `timeout` cannot do that: by the time it returns, the evidence is gone.

Pure Python 3.8+ standard library, shared by the nccl_run module.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import Dict, List, Optional

from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.forensics import descendants, report

# coreutils timeout's exit codes, which nccl_report reads: stopped by TERM, or still alive after the grace.
TIMEOUT_RC = 124
KILLED_RC = 137
_POLL_S = 0.2


class BoundedRunError(ValueError):
    """The command could not be started; the message names the cause and the fix."""


def run_bounded(argv: List[str], stdout_path: str, stderr_path: str, timeout_s: float,
                kill_after_s: float = 10.0, env: Optional[Dict[str, str]] = None, cwd: Optional[str] = None,
                forensics: bool = True, ras_port: int = 28028, ras_wait_s: float = 5.0) -> dict:
    """rc, timed_out, duration_s and the forensics lines (also appended to stderr_path)."""
    # O_APPEND: the evidence appended to stderr at a hang must not be overwritten by what the
    # dying processes still write at their own offsets. 0600: an output may echo the environment.
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    started = time.monotonic()
    try:
        with open(os.open(stdout_path, flags, 0o600), "wb") as out, \
                open(os.open(stderr_path, flags, 0o600), "wb") as err:
            # A session of its own: the whole tree can be signalled, and nothing waits on our stdin.
            process = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env,
                                       cwd=cwd, start_new_session=True)
    except OSError as error:
        raise BoundedRunError("cannot start {0}: {1}: check that it exists and is executable".format(
            argv[0] if argv else "(empty command)", error))
    deadline = started + timeout_s
    while process.poll() is None and time.monotonic() < deadline:
        time.sleep(_POLL_S)
    if process.returncode is not None:
        return {"rc": process.returncode, "timed_out": False, "forensics": [],
                "duration_s": round(time.monotonic() - started, 3)}

    evidence = report([process.pid], ras_port, ras_wait_s) if forensics else []
    if evidence:
        with open(stderr_path, "a", encoding="utf-8") as err:
            err.write("\n".join(evidence) + "\n")
    rc = _stop(process, kill_after_s)
    return {"rc": rc, "timed_out": True, "forensics": evidence, "duration_s": round(time.monotonic() - started, 3)}


def _stop(process: subprocess.Popen, kill_after_s: float) -> int:
    """TERM to the tree (CONT too: a stopped rank would never act on it), then KILL after the grace.
    Launchers put workers in sessions of their own, so the tree is walked, not only the group."""
    tree = descendants([process.pid])
    for sig in (signal.SIGTERM, signal.SIGCONT):
        _signal_all(process.pid, tree, sig)
    try:
        process.wait(timeout=kill_after_s)
        return TIMEOUT_RC
    except subprocess.TimeoutExpired:
        _signal_all(process.pid, tree + descendants([process.pid]), signal.SIGKILL)
        process.wait()
        return KILLED_RC


def _signal_all(leader: int, pids: List[int], sig: int) -> None:
    try:
        os.killpg(leader, sig)
    except OSError:
        pass
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass
