"""Helpers for the lab tests, imported as lab_helpers.

Each test module uses its own lab index (90-99), so modules can run in parallel.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ncclkit.lab import netns
from ncclkit.lab.plan import STATE_ROOT, state_dir

REPO_ROOT = Path(__file__).resolve().parents[2]

needs_root = pytest.mark.skipif(
    os.geteuid() != 0,
    reason="the lab cluster needs root (network namespaces, veths, mounts): run pytest as root")


def leftovers(index: int, inventory: Path | None = None) -> list[str]:
    """Everything of lab `index` still on this machine; empty when `down` did its job."""
    found = [f"netns {name}" for name in netns.lab_namespaces(index)]
    found += [f"link {name}" for name in netns.lab_links(index)]
    marker = f"{state_dir(index)}/"
    with open("/proc/self/mountinfo") as stream:
        found += [f"mount {line.split()[4]}" for line in stream if marker in line]
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as stream:
                cmdline = stream.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            found.append(f"process {entry}: {cmdline.strip()}")
    found += [f"file {path}" for path in (state_dir(index), STATE_ROOT / f"{index}.lock")
              if path.exists()]
    if inventory and inventory.exists():
        found.append(f"inventory {inventory}")
    return found


def ncclkit(*args: str, **kwargs) -> subprocess.CompletedProcess:
    """The `ncclkit` command from this checkout, as a separate process."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")}
    return subprocess.run([sys.executable, "-m", "ncclkit.cli", *args], capture_output=True,  # pylint: disable=subprocess-run-check
                          text=True, env=env, **kwargs)


def ansible_ping(inventory: Path, pattern: str, forks: int = 16) -> subprocess.CompletedProcess:
    ansible = Path(sys.executable).parent / "ansible"
    return subprocess.run([str(ansible), pattern, "-i", str(inventory), "-m", "ping",
                           "-f", str(forks), "-o"],
                          capture_output=True, text=True, timeout=300, cwd=REPO_ROOT, check=False)


def pong_hosts(output: str) -> set[str]:
    """Hosts that answered `ansible -m ping -o` with pong."""
    return {line.split(" | ")[0] for line in output.splitlines()
            if " | SUCCESS" in line and '"pong"' in line}
