"""Running the roles against a lab cluster from a test: one lab fixture body, one playbook runner.

Import it from any test module (tests/ is on sys.path): `from lab_playbook import lab_cluster, play`.
The runner serves the local (connection: local) playbook tests too: it needs no lab.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pytest

from conftest import REPO_ROOT
from ncclkit.lab import Lab

RECAP = re.compile(r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)
# ansible.posix's json callback: the whole run as one JSON document on stdout.
JSON_CALLBACK = "ansible.posix.json"


@dataclass
class Played:
    rc: int
    stdout: str          # stdout and stderr joined, as a terminal shows them (what `in` checks read)
    seconds: float
    recap: dict          # host -> {ok, changed, unreachable, failed}
    out: str = ""        # stdout alone: with `structured`, the json callback's document
    err: str = ""        # stderr alone
    json: dict | None = field(default=None, repr=False)   # `out` parsed, when the run was structured

    def flat(self) -> str:
        """The output on one line, YAML's doubled quotes undone: for `in` checks of wrapped messages."""
        return " ".join(self.stdout.replace("''", "'").split())

    def changed(self) -> dict:
        """host -> its count of changed tasks."""
        return {host: counts["changed"] for host, counts in self.recap.items()}

    def task(self, name: str) -> dict:
        """host -> result of the last task with this name (structured runs)."""
        found = self._tasks(name)
        return found[-1]["hosts"] if found else {}

    def duration(self, first: str, last: str) -> float:
        """Seconds from the start of task `first` to the end of task `last` (structured runs)."""
        start = self._tasks(first)[0]["task"]["duration"]["start"]
        end = self._tasks(last)[-1]["task"]["duration"]["end"]
        return _seconds(end) - _seconds(start)

    def _tasks(self, name: str) -> list:
        assert self.json is not None, f"not a structured run (rc {self.rc}):\n{self.stdout[-3000:]}"
        # The json callback names a role's task "role : name".
        return [task for play in self.json["plays"] for task in play["tasks"]
                if task["task"]["name"] == name or task["task"]["name"].endswith(f" : {name}")]


def _seconds(stamp: str) -> float:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()


def lab_cluster(index: int, folder: Path, **up):
    """The body of a module-scoped lab fixture: `yield from lab_cluster(INDEX, tmp, profile="autodl")`
    (INDEX from tests/lab_indices.py)."""
    if os.geteuid() != 0:
        pytest.skip("the lab cluster needs root: run pytest as root")
    lab = Lab(index)
    lab.down()   # whatever an interrupted earlier run left
    assert lab.up(inventory_path=folder / "hosts.yml", **up) is True   # built now, not found up
    try:
        yield lab
    finally:
        lab.down()


def play(inventory: Path, playbook: str, variables: dict | None = None, env: dict | None = None,
         args: tuple = (), timeout: int = 600, cwd: Path = REPO_ROOT, structured: bool = False) -> Played:
    """ansible-playbook from the checkout (or started in `cwd`), as a user runs it, with extra
    variables as JSON; `args` go last (more `-i`, `--check`, `-e @file`). `env` adds to this
    process's environment (a None value takes a variable out). `structured` runs the json callback:
    the result's `json`, `task()` and `duration()` read each task's result."""
    argv = [str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(inventory), playbook,
            *(["-e", json.dumps(variables)] if variables else []), *args]
    full_env = {**os.environ, "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
                "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_DEPRECATION_WARNINGS": "0",
                **({"ANSIBLE_STDOUT_CALLBACK": JSON_CALLBACK} if structured else {}), **(env or {})}
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=timeout, check=False,
                          env={key: value for key, value in full_env.items() if value is not None})
    seconds = time.monotonic() - started
    document = json.loads(done.stdout) if structured and done.stdout.lstrip().startswith("{") else None
    if document:
        recap = {host: {"ok": stats["ok"], "changed": stats["changed"], "unreachable": stats["unreachable"],
                        "failed": stats["failures"]} for host, stats in document["stats"].items()}
    else:
        recap = {host: dict(zip(("ok", "changed", "unreachable", "failed"), map(int, counts), strict=True))
                 for host, *counts in RECAP.findall(done.stdout)}
    return Played(done.returncode, done.stdout + done.stderr, seconds, recap, done.stdout, done.stderr, document)
