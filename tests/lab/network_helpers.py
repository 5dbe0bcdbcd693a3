"""Helpers for the nccl_network lab tests: run the role on a lab, read what it did."""

from __future__ import annotations

import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

from lab_helpers import leftovers
from lab_playbook import Played, lab_cluster
from lab_playbook import play as run_playbook

from ncclkit.lab import Lab

PLAYBOOK = Path(__file__).parent / "playbooks" / "network.yml"
# The tools are on the host already (nodes share /usr); the tests skip the package step.
FAST = {"nccl_network_install_packages": False, "nccl_network_iperf3": False}


@contextmanager
def lab_with_outsider(index: int, nodes: int, folder: Path, setups=None):
    """Lab `index` (lab_playbook's lab_cluster) with `nodes` nodes and an outsider, each node after
    its setup script; removed completely afterwards. `lab.inventory` is its inventory, in `folder`."""
    with contextmanager(lab_cluster)(index, folder, nodes=nodes, outsider=True) as lab:
        lab.inventory = folder / "hosts.yml"
        for node, script in (setups or {}).items():
            sh(lab, node, script)
        yield lab
    assert leftovers(index, folder / "hosts.yml") == []


def play(inventory: Path, *args: str, variables: dict | None = None, structured: bool = True,
         timeout: int = 240) -> Played:
    """The test playbook (nccl_preflight, nccl_network) through lab_playbook's runner, the package
    step skipped; structured (json callback) unless the test reads the text output."""
    return run_playbook(inventory, str(PLAYBOOK), {**FAST, **(variables or {})}, args=args, timeout=timeout,
                        structured=structured)


def facts(result: Played, host: str) -> dict:
    """The ncclkit_network fact that the run recorded on `host`."""
    return result.task("Record ncclkit_network for the roles that follow")[host]["ansible_facts"]["ncclkit_network"]


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
