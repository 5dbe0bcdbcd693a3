"""benchmarks/controller_cpu.py: a command's CPU seconds include what it left running detached (an
`ssh` ControlPersist master, here a stand-in named ssh that burns CPU, then waits as a master does),
which is stopped and counted when the command ends. Run in a child process: a subreaper would
adopt every orphan of the test session."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"

CHILD = """
import os, subprocess, sys, time
sys.path.insert(0, sys.argv[1])
from controller_cpu import ControllerCpu
ssh = os.path.join(sys.argv[2], "ssh")
os.symlink(sys.executable, ssh)   # the kernel names the process after the file it ran: ssh
burn = "import time\\nstart = time.process_time()\\nwhile time.process_time() - start < 0.4: pass\\ntime.sleep(60)"
with ControllerCpu() as cpu:
    # The shell starts the stand-in in the background and exits at once: it is orphaned, as a master is.
    subprocess.run(["sh", "-c", f"{ssh} -c '{burn}' >/dev/null 2>&1 &"], check=True)
    time.sleep(1.5)
left = subprocess.run(["pgrep", "-f", f"^{ssh} "], capture_output=True, text=True).stdout.split()
print(f"{cpu.seconds:.2f} {len(left)}")
"""


def test_detached_ssh_is_stopped_and_counted(tmp_path):
    done = subprocess.run([sys.executable, "-c", CHILD, str(BENCHMARKS), str(tmp_path)], capture_output=True,
                          text=True, timeout=60, check=True)
    seconds, left = done.stdout.split()
    assert float(seconds) >= 0.35, done.stdout   # the detached process's CPU is in the figure
    assert left == "0"                            # and it was stopped
