"""Helpers for the nccl_network lab tests: run the role on a lab, read what it did."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from lab_helpers import leftovers

from ncclkit.lab import Lab

REPO_ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK = Path(__file__).parent / "playbooks" / "network.yml"
# The tools are on the host already (nodes share /usr); the tests skip the package step.
FAST = {"nccl_network_install_packages": False, "nccl_network_iperf3": False}


@contextmanager
def lab_with_outsider(index: int, nodes: int, inventory: Path, setups=None):
    """Lab `index` with `nodes` nodes and an outsider, each node after its setup script; removed
    completely afterwards. `lab.inventory` is its inventory."""
    lab = Lab(index)
    lab.down()   # whatever an interrupted earlier run left
    lab.up(nodes=nodes, outsider=True, inventory_path=inventory)
    lab.inventory = inventory
    try:
        for node, script in (setups or {}).items():
            sh(lab, node, script)
        yield lab
    finally:
        lab.down()
    assert leftovers(index, inventory) == []


class Play:
    def __init__(self, process: subprocess.CompletedProcess, seconds: float):
        self.rc = process.returncode
        self.stdout = process.stdout
        self.stderr = process.stderr
        self.seconds = seconds
        self.json = json.loads(process.stdout) if process.stdout.lstrip().startswith("{") else None

    def changed(self) -> dict:
        return {host: stats["changed"] for host, stats in self.json["stats"].items()}

    def _tasks(self, name):
        # The json callback names a role's task "role : name".
        return [task for play in self.json["plays"] for task in play["tasks"]
                if task["task"]["name"] == name or task["task"]["name"].endswith(f" : {name}")]

    def task(self, name: str) -> dict:
        """host -> result of the last task with this name."""
        found = self._tasks(name)
        return found[-1]["hosts"] if found else {}

    def duration(self, first: str, last: str) -> float:
        """Seconds from the start of task `first` to the end of task `last`."""
        start = self._tasks(first)[0]["task"]["duration"]["start"]
        end = self._tasks(last)[-1]["task"]["duration"]["end"]
        return _seconds(end) - _seconds(start)

    def facts(self, host: str) -> dict:
        return self.task("Record ncclkit_network for the roles that follow")[host]["ansible_facts"]["ncclkit_network"]


def _seconds(stamp: str) -> float:
    from datetime import datetime
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()


def play(inventory: Path, *args: str, variables: dict | None = None, structured: bool = True,
         timeout: int = 240) -> Play:
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_DEPRECATION_WARNINGS": "0"}
    if structured:
        env["ANSIBLE_STDOUT_CALLBACK"] = "ansible.posix.json"
    argv = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), str(PLAYBOOK),
            "-e", json.dumps({**FAST, **(variables or {})}), *args]
    start = time.monotonic()
    process = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=REPO_ROOT, env=env, check=False)
    return Play(process, time.monotonic() - start)


def sh(lab: Lab, node: str, script: str, check: bool = True) -> str:
    done = lab.exec(node, ["sh", "-c", script], capture_output=True, text=True, timeout=60)
    if check:
        assert done.returncode == 0, f"{node}: {script}: {done.stderr or done.stdout}"
    return done.stdout


LISTENER = """
import selectors, socket, sys
sel = selectors.DefaultSelector()
for port in map(int, sys.argv[1:]):
    sel.register(socket.create_server(("0.0.0.0", port)), selectors.EVENT_READ)
while True:
    for key, _ in sel.select():
        key.fileobj.accept()[0].close()
"""


class Listeners:
    """TCP listeners on every node, as NCCL and torchrun would open them."""

    def __init__(self, lab: Lab, nodes, ports):
        self.ports = ports
        self.processes = [subprocess.Popen(lab.command(node, ["python3", "-c", LISTENER, *map(str, ports)]))
                          for node in nodes]
        time.sleep(0.5)

    def close(self):
        for process in self.processes:
            process.kill()
            process.wait()


def reachable(lab: Lab, source: str, address: str, ports) -> dict:
    """port -> True when `source` completes a TCP connection to address:port within a second."""
    code = ("import socket, sys\nfor port in sys.argv[2:]:\n    try:\n"
            "        socket.create_connection((sys.argv[1], int(port)), timeout=1).close(); print(port, 1)\n"
            "    except OSError:\n        print(port, 0)\n")
    done = lab.exec(source, ["python3", "-c", code, address, *map(str, ports)], capture_output=True, text=True,
                    timeout=60)
    return {int(line.split()[0]): line.split()[1] == "1" for line in done.stdout.splitlines()}
