"""The controller's CPU seconds of one command, from the kernel's accounting of waited-for children.

`getrusage(RUSAGE_CHILDREN)` counts a process only once it is waited for, so two kinds would be lost:
SSH's ControlPersist masters (an `ssh` that detaches and outlives the play by its persist time) and
anything else that detaches. `ControllerCpu` makes this process their subreaper (they are reparented
to it, not to init), and after the command ends it stops the `ssh` processes reparented to it and
waits for them: the figure is then the command, its workers, its SSH clients and their masters, and
nothing of the other work on the machine (process accounting by command name would also count
another user's `ansible-playbook`). Linux only; no root needed.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import time
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36


def _cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _adopted(command: str) -> list[int]:
    """Processes named `command` whose parent is this process (detached descendants, reparented here)."""
    me, found = os.getpid(), []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
        if name == command and int(rest[1]) == me:
            found.append(int(entry.name))
    return found


def _subreaper(on: bool) -> None:
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


class ControllerCpu:
    """`with ControllerCpu() as cpu: subprocess.run(...)`; then `cpu.seconds`. This process is the
    subreaper only inside the block, so that nothing started outside it (a lab's sshd) is adopted."""

    def __init__(self):
        self.seconds = 0.0

    def __enter__(self):
        _subreaper(True)
        self._before = _cpu_of_children()
        return self

    def __exit__(self, *exc):
        stopped = []
        for pid in _adopted("ssh"):   # ControlPersist masters: stop them now, not in 60 s
            try:
                os.kill(pid, signal.SIGTERM)
                stopped.append(pid)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 10
        while stopped and time.monotonic() < deadline:
            for pid in list(stopped):
                try:
                    done, dummy = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    done = pid
                if done:
                    stopped.remove(pid)
            time.sleep(0.05)
        _subreaper(False)
        self.seconds = _cpu_of_children() - self._before
        return False
