"""Evidence about a hung job, taken BEFORE it is killed: per rank, the process state and kernel
wait channel (/proc/PID/stat, /proc/PID/wchan), a Python stack (`py-spy dump`) where py-spy is
installed, and NCCL's RAS report (NCCL >= 2.24 answers on 127.0.0.1:28028, plain-text protocol).

Pure Python 3.8+ standard library, so the validate role and the launcher can copy it to a host
and run it as a script:

    python3 nccl_forensics.py [--ras-port 28028] [--wait 10] ROOT_PID...

ROOT_PID is the launcher (mpirun, torchrun, the shell that started them): every descendant that
carries a rank in its environment (RANK, OMPI_COMM_WORLD_RANK, PMI_RANK) is examined. Each line
printed starts with `ncclkit-forensics:` so that `ncclkit diagnose` finds it in a combined log.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import time
from typing import Dict, List, Optional

PREFIX = "ncclkit-forensics:"
RAS_PORT = 28028
_RANK_VARS = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID")
_STATES = {"R": "running", "S": "sleeping", "D": "uninterruptible wait", "T": "stopped",
           "t": "stopped by a tracer", "Z": "zombie", "X": "dead"}


def proc_stat(pid: int, proc: str = "/proc") -> Optional[dict]:
    """State, parent and command name of one process (None when it is gone)."""
    try:
        with open(f"{proc}/{pid}/stat", "rb") as handle:
            raw = handle.read().decode("utf-8", "replace")
    except OSError:
        return None
    # comm may hold spaces and parentheses: it ends at the LAST ')'.
    start, end = raw.find("("), raw.rfind(")")
    fields = raw[end + 2:].split()
    if start < 0 or end < 0 or len(fields) < 2:
        return None
    return {"pid": pid, "comm": raw[start + 1:end], "state": fields[0], "ppid": int(fields[1])}


def _read(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            return handle.read(4096).decode("utf-8", "replace").strip()
    except OSError:
        return ""


def rank_of(pid: int, proc: str = "/proc") -> Optional[int]:
    try:
        with open(f"{proc}/{pid}/environ", "rb") as handle:
            env = handle.read(1 << 20).split(b"\0")
    except OSError:
        return None
    values = dict(item.split(b"=", 1) for item in env if b"=" in item)
    for name in _RANK_VARS:
        value = values.get(name.encode())
        if value is not None and value.isdigit():
            return int(value)
    return None


def descendants(roots: List[int], proc: str = "/proc") -> List[int]:
    children: Dict[int, List[int]] = {}
    for entry in os.listdir(proc):
        if entry.isdigit():
            stat = proc_stat(int(entry), proc)
            if stat:
                children.setdefault(stat["ppid"], []).append(stat["pid"])
    seen, todo = [], list(roots)
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.append(pid)
        todo.extend(children.get(pid, ()))
    return sorted(seen)


def host_of(pid: int) -> str:
    """The hostname the process sees (its UTS namespace), else this machine's."""
    nsenter = shutil.which("nsenter")
    if nsenter and os.geteuid() == 0:
        try:
            done = subprocess.run([nsenter, "-t", str(pid), "-u", "hostname"], capture_output=True,
                                  text=True, timeout=5, check=False)
            if done.returncode == 0 and done.stdout.strip():
                return done.stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return socket.gethostname()


def rank_processes(roots: List[int], proc: str = "/proc") -> List[dict]:
    """The ranks under the roots: the outermost process carrying each rank (a Python rank's
    helper threads and children carry the same variables)."""
    found: Dict[int, dict] = {}
    for pid in descendants(roots, proc):
        rank = rank_of(pid, proc)
        stat = proc_stat(pid, proc)
        if rank is None or stat is None or rank in found:
            continue
        if stat["comm"] in ("sh", "bash", "env", "unshare", "torchrun", "mpirun", "orted", "prterun"):
            continue
        found[rank] = dict(stat, rank=rank, wchan=_read(f"{proc}/{pid}/wchan") or "-")
    return [found[rank] for rank in sorted(found)]


def py_spy(pid: int) -> List[str]:
    tool = shutil.which("py-spy")
    if not tool:
        return ["py-spy not installed (pip install py-spy): no Python stack"]
    try:
        done = subprocess.run([tool, "dump", "--pid", str(pid)], capture_output=True, text=True,
                              timeout=20, check=False)
    except (OSError, subprocess.SubprocessError) as error:
        return [f"py-spy failed: {error}"]
    lines = (done.stdout + done.stderr).splitlines()
    return [line for line in lines if line.strip()][:60]


def ras_query(port: int = RAS_PORT, wait: float = 10.0, host: str = "127.0.0.1") -> List[str]:
    """NCCL's RAS text report; retried until `wait` seconds pass (the port refuses connections
    until the first communicator exists)."""
    deadline = time.monotonic() + wait
    error = None
    while True:
        try:
            with socket.create_connection((host, port), timeout=5) as conn:
                conn.settimeout(max(5.0, wait))
                conn.sendall(b"CLIENT PROTOCOL 2\nVERBOSE STATUS\n")
                chunks = []
                while True:
                    try:
                        chunk = conn.recv(65536)
                    except socket.timeout:
                        break
                    if not chunk:
                        break
                    chunks.append(chunk)
                    if sum(map(len, chunks)) > (4 << 20):
                        break
                text = b"".join(chunks).decode("utf-8", "replace").splitlines()
                # A stopped rank may own the port: the kernel accepts, nobody answers.
                return text or [f"RAS on {host}:{port} accepted but sent nothing (the rank "
                                "that owns the port may be the stopped one)"]
        except OSError as exc:
            error = exc
        if time.monotonic() >= deadline:
            return [f"no RAS answer on {host}:{port} ({error}): NCCL older than 2.24, RAS disabled "
                    "(NCCL_RAS_ENABLE=0) or no communicator yet"]
        time.sleep(1.0)


def report(roots: List[int], port: int = RAS_PORT, wait: float = 10.0, stacks: bool = True) -> List[str]:
    lines = []
    ranks = rank_processes(roots)
    if not ranks:
        lines.append(f"{PREFIX} no rank process found under pid(s) {' '.join(map(str, roots))}")
    for item in ranks:
        state = item["state"]
        lines.append(f"{PREFIX} rank={item['rank']} host={host_of(item['pid'])} pid={item['pid']} "
                     f"state={state} ({_STATES.get(state, 'unknown')}) wchan={item['wchan']} "
                     f"comm={item['comm']}")
        if stacks and item["comm"].startswith("python") and state not in ("T", "t", "Z"):
            lines.extend(f"{PREFIX} py-spy rank={item['rank']}: {line}" for line in py_spy(item["pid"]))
    lines.extend(f"{PREFIX} ras: {line}" for line in ras_query(port, wait))
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("roots", nargs="+", type=int, metavar="ROOT_PID")
    parser.add_argument("--ras-port", type=int, default=RAS_PORT)
    parser.add_argument("--wait", type=float, default=10.0, help="seconds to retry RAS")
    parser.add_argument("--no-stacks", action="store_true", help="skip py-spy")
    args = parser.parse_args(argv)
    for line in report(args.roots, args.ras_port, args.wait, not args.no_stacks):
        # Also a command of its own (see the docstring), run outside any module: print and exit are its interface.
        print(line, flush=True)  # pylint: disable=ansible-bad-function
    return 0


if __name__ == "__main__":
    sys.exit(main())  # pylint: disable=ansible-bad-function
