"""Run a playbook through ansible-runner: events into a queue for progress, ansible-playbook's own
output kept as the run's log, and a fresh private data dir per run."""

from __future__ import annotations

import contextlib
import os
import queue
import shlex
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ansible_runner.interface import init_runner

from ncclkit.ansible_settings import added_settings, config_file

# Events a person wants to see while a play runs; the rest are noise for progress.
PROGRESS_EVENTS = {
    "playbook_on_play_start",
    "playbook_on_task_start",
    "runner_on_start",
    "runner_on_ok",
    "runner_on_failed",
    "runner_on_unreachable",
    "runner_on_skipped",
}

STATS_KEYS = ("ok", "changed", "failures", "dark", "skipped", "rescued", "ignored")

# How often (seconds) ansible-runner looks at the cancel flag, and how long ansible-playbook has to
# stop its workers after Ctrl-C before ansible-runner kills its process group (the workers are in
# sessions of their own: only ansible-playbook stops them).
CANCEL_POLL_S = 0.5
STOP_GRACE_S = 10
# After the cancel: ansible-runner sees the flag within CANCEL_POLL_S, kills the process group and
# reads the last output for up to 5 s. Past this bound ncclkit kills the group itself and returns.
CANCEL_JOIN_S = 8


@dataclass
class PlaybookResult:
    rc: int
    status: str
    stats: dict = field(default_factory=dict)
    failures: list[dict] = field(default_factory=list)      # failed and unreachable, not ignored
    unreachable: dict[str, str] = field(default_factory=dict)  # host -> why


def run_playbook(
    playbook: str | Path,
    inventory: str | Path,
    *,
    project_dir: str | Path,
    extravars: dict | None = None,
    extra_args: Iterable[str] = (),
    check: bool = False,
    diff: bool = False,
    limit: str | None = None,
    tags: Iterable[str] = (),
    skip_tags: Iterable[str] = (),
    verbosity: int = 0,
    on_event: Callable[[dict], None] | None = None,
    keep_log: Callable[[Path], None] | None = None,
) -> PlaybookResult:
    """Run `playbook` against `inventory`; `on_event` gets each progress event as it happens.

    `extra_args` are ansible-playbook's own `-e` values (NAME=VALUE, JSON, @file), passed as given.
    `keep_log(path)` gets ansible-playbook's output file before the private data dir goes, also when
    the run is interrupted. Ctrl-C (KeyboardInterrupt) stops ansible-playbook and is raised again.
    """
    events: queue.Queue = queue.Queue()
    private_data_dir = tempfile.mkdtemp(prefix="ncclkit-runner-")
    cmdline = [*(["--check"] if check else []), *(["--diff"] if diff else [])]
    for value in extra_args:
        cmdline += ["-e", value]
    failures: list[dict] = []
    unreachable: dict[str, str] = {}
    stats: dict = {}
    cancel = threading.Event()
    playbook_pid: list[int] = []  # ansible-playbook's, from its first event

    def collect(event: dict) -> bool:
        kind = event.get("event")
        data = event.get("event_data", {})
        if not playbook_pid and isinstance(event.get("pid"), int):
            playbook_pid.append(event["pid"])
        if kind == "playbook_on_stats":
            stats.update({key: data.get(key, {}) for key in STATS_KEYS})
        if kind in PROGRESS_EVENTS:
            events.put(event)
        if kind in ("runner_on_failed", "runner_on_unreachable") and not data.get("ignore_errors"):
            failures.append({"host": data.get("host"), "task": data.get("task"),
                             "msg": str(data.get("res", {}).get("msg", "")).strip()})
        if kind == "runner_on_unreachable":
            unreachable[data.get("host")] = str(data.get("res", {}).get("msg", "")).strip()
        return False  # keep no job_events files: the queue carries them

    runner = thread = None
    try:
        runner = init_runner(
            private_data_dir=private_data_dir,
            project_dir=str(project_dir),
            playbook=str(Path(playbook).resolve()),
            inventory=str(Path(inventory).resolve()),
            extravars=extravars or {},
            cmdline=shlex.join(cmdline) if cmdline else None,
            limit=limit or None,
            tags=",".join(tags) or None,
            skip_tags=",".join(skip_tags) or None,
            verbosity=verbosity or None,
            quiet=True,
            event_handler=collect,
            # Our own flag: ansible-runner's default takes SIGINT and SIGTERM from the process for good.
            cancel_callback=cancel.is_set,
            settings={"pexpect_timeout": CANCEL_POLL_S},
            envvars=_ansible_env(Path(project_dir)),
        )
        # A daemon: a runner thread that never ends cannot keep ncclkit from exiting after Ctrl-C.
        thread = threading.Thread(target=runner.run, name="ansible-runner", daemon=True)
        try:
            thread.start()
            _drain(events, thread, on_event)
        except KeyboardInterrupt:
            _interrupt(thread, playbook_pid, cancel)
            raise
        return PlaybookResult(rc=runner.rc, status=runner.status, stats=stats, failures=failures,
                              unreachable=unreachable)
    finally:
        if keep_log and thread is not None and Path(runner.config.artifact_dir, "stdout").is_file():
            keep_log(Path(runner.config.artifact_dir, "stdout"))
        shutil.rmtree(private_data_dir, ignore_errors=True)


def _ansible_env(project_dir: Path) -> dict:
    # ansible-playbook is found beside this interpreter, also when its venv is not activated.
    env = {"PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
           # Relative paths of the roles (nccl_validate's report folder) are the caller's, not the
           # project folder's that ansible-runner starts ansible-playbook in.
           "PWD": os.getcwd(),
           # The output is kept as the run's log, a file: no terminal colour codes in it.
           "ANSIBLE_NOCOLOR": "1"}
    # ansible-playbook starts in the project folder: the configuration it would have found from the
    # caller's folder is named to it, and the connection settings it leaves unset are added.
    config = config_file(project_dir)
    if config is not None:
        env["ANSIBLE_CONFIG"] = str(config)
    env.update(added_settings(config))
    return env


def _interrupt(thread: threading.Thread, playbook_pid: list[int], cancel: threading.Event) -> None:
    """Stop the play after Ctrl-C, in bounded time: ansible-playbook's own stop, then ansible-runner's
    kill of its process group, then ncclkit's. A second Ctrl-C meanwhile still sets the cancel."""
    try:
        _stop(thread, playbook_pid)
    finally:
        if thread.is_alive() and playbook_pid:
            # ansible-playbook did not stop in time: its workers run in sessions of their own, which
            # no group kill reaches, and may still start their task's command. Stop them all.
            _kill_tree(playbook_pid[0])
        cancel.set()  # what is left: ansible-runner kills ansible-playbook's process group
        thread.join(CANCEL_JOIN_S)
        if thread.is_alive():
            _kill_group(playbook_pid)
            thread.join(CANCEL_POLL_S)


def _descendants(pid: int) -> list[int]:
    """The processes under `pid` now, from /proc (Linux)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(stat.parent.name))
    found, todo = [], list(children.get(pid, []))
    while todo:
        child = todo.pop()
        found.append(child)
        todo.extend(children.get(child, []))
    return found


def _kill_tree(pid: int) -> None:
    """SIGKILL `pid` and everything under it. The tree is frozen first (SIGSTOP, until a look finds
    nothing new), so that no process forks a child the kill would miss."""
    frozen: set[int] = set()
    for dummy in range(5):
        new = [child for child in [pid, *_descendants(pid)] if child not in frozen]
        if not new:
            break
        for each in new:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(each, signal.SIGSTOP)
            frozen.add(each)
    for each in frozen:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(each, signal.SIGKILL)


def _kill_group(playbook_pid: list[int]) -> None:
    """SIGKILL ansible-playbook's process group: ansible-runner starts it in a session of its own, so
    the group's id is its pid (a pid that leads no group is no longer ansible-playbook's)."""
    if not playbook_pid:
        return
    try:
        if os.getpgid(playbook_pid[0]) == playbook_pid[0]:
            os.killpg(playbook_pid[0], signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _stop(thread: threading.Thread, playbook_pid: list[int]) -> None:
    """Ctrl-C for ansible-playbook, as on a terminal: it stops its workers and the tasks they run."""
    if playbook_pid and thread.is_alive():  # alive: ansible-runner has not reaped it, the pid is its
        try:
            os.kill(playbook_pid[0], signal.SIGINT)
        except ProcessLookupError:
            return
        thread.join(STOP_GRACE_S)


def _drain(events: queue.Queue, thread: threading.Thread, on_event) -> None:
    while thread.is_alive() or not events.empty():
        try:
            event = events.get(timeout=0.2)
        except queue.Empty:
            continue
        if on_event:
            on_event(event)
