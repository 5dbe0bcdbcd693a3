"""Run a playbook through ansible-runner, as ansible-navigator does: json_mode, events into a
queue for progress, and a fresh private data dir per run."""

from __future__ import annotations

import os
import queue
import shutil
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import ansible_runner

# Events a person wants to see while a play runs; the rest are noise for progress.
PROGRESS_EVENTS = {
    "playbook_on_play_start",
    "playbook_on_task_start",
    "runner_on_ok",
    "runner_on_failed",
    "runner_on_unreachable",
    "runner_on_skipped",
}

STATS_KEYS = ("ok", "changed", "failures", "dark", "skipped", "rescued", "ignored")


@dataclass
class PlaybookResult:
    rc: int
    status: str
    stats: dict = field(default_factory=dict)
    failures: list[dict] = field(default_factory=list)


def run_playbook(
    playbook: str | Path,
    inventory: str | Path,
    *,
    project_dir: str | Path,
    extravars: dict | None = None,
    check: bool = False,
    tags: Iterable[str] = (),
    on_event: Callable[[dict], None] | None = None,
) -> PlaybookResult:
    """Run `playbook` against `inventory`; `on_event` gets each progress event as it happens."""
    events: queue.Queue = queue.Queue()
    private_data_dir = tempfile.mkdtemp(prefix="ncclkit-runner-")
    cmdline = " ".join(filter(None, ["--check" if check else "", f"--tags {','.join(tags)}" if tags else ""]))
    failures: list[dict] = []
    stats: dict = {}

    def collect(event: dict) -> bool:
        if event.get("event") == "playbook_on_stats":
            data = event.get("event_data", {})
            stats.update({key: data.get(key, {}) for key in STATS_KEYS})
        if event.get("event") in PROGRESS_EVENTS:
            events.put(event)
        if event.get("event") in ("runner_on_failed", "runner_on_unreachable"):
            data = event.get("event_data", {})
            if not data.get("ignore_errors"):
                failures.append({"host": data.get("host"), "task": data.get("task"),
                                 "msg": data.get("res", {}).get("msg", "")})
        return False  # keep no job_events files: the queue carries them

    try:
        thread, runner = ansible_runner.run_async(
            private_data_dir=private_data_dir,
            project_dir=str(project_dir),
            playbook=str(Path(playbook).resolve()),
            inventory=str(Path(inventory).resolve()),
            extravars=extravars or {},
            cmdline=cmdline or None,
            json_mode=True,
            quiet=True,
            event_handler=collect,
            envvars=_ansible_env(Path(project_dir)),
        )
        _drain(events, thread, on_event)
        return PlaybookResult(rc=runner.rc, status=runner.status, stats=stats,
                              failures=failures)
    finally:
        shutil.rmtree(private_data_dir, ignore_errors=True)


def _ansible_env(project_dir: Path) -> dict:
    # ansible-playbook is found beside this interpreter, also when its venv is not activated.
    env = {"PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
           # Relative paths of the roles (nccl_validate's report folder) are the caller's, not the
           # project folder's that ansible-runner starts ansible-playbook in.
           "PWD": os.getcwd()}
    if (project_dir / "ansible.cfg").is_file():
        env["ANSIBLE_CONFIG"] = str((project_dir / "ansible.cfg").resolve())
    return env


def _drain(events: queue.Queue, thread: threading.Thread, on_event) -> None:
    while thread.is_alive() or not events.empty():
        try:
            event = events.get(timeout=0.2)
        except queue.Empty:
            continue
        if on_event:
            on_event(event)
