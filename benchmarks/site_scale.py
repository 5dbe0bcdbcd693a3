#!/usr/bin/env python
"""How `site.yml`'s wall time grows with the number of lab nodes (goal: 16 nodes at most 2x the
2-node time on the second run, 3x on the first).

Run as root from the checkout (the shared venv's python):
    python benchmarks/site_scale.py [--index 140] [--nodes 2 16] [--profile] [--cpu] [--baseline DIR]

It brings up one lab per size at once (indices INDEX, INDEX+1, ...), then runs `site.yml` on
them alternately (first run on every size, then the second run on every size), so that a load
from other users of the machine falls on all sizes alike and the ratios are what to quote. Each
run uses `forks` = the number of hosts; each second run must report changed=0. It prints the
load average, a Markdown table (docs/benchmarks.md keeps one), the ratios to the smallest lab and
the seconds per added host. --cpu records the kernel's process accounting around each run (the
`acct` package) and splits its CPU seconds into the controller's and the nodes' own (which on this
machine share its cores, and on a real cluster do not). --profile enables the profile_tasks
callback and prints each run's slowest tasks. --baseline (another checkout, e.g.
`git worktree add /tmp/base main`) runs that checkout's site.yml on labs of its own, alternated
with this one's.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import process_cpu

REPO = Path(__file__).resolve().parents[1]
RECAP = re.compile(r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)"
                   r"\s+skipped=(\d+)", re.M)
# profile_tasks' lines: "role : task name ------- 12.34s"
TASK_TIME = re.compile(r"^(.+?) -{3,} (\d+\.\d+)s$", re.M)


def env_for(repo: Path, **extra: str) -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(repo / "src"), str(repo / "collections")]),
                ANSIBLE_CONFIG=str(repo / "ansible.cfg"), ANSIBLE_NOCOLOR="1", **extra)


def lab(repo: Path, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ncclkit.cli", "lab", *argv], env=env_for(repo), cwd=repo,
                          capture_output=True, text=True, check=False)


def site(repo: Path, inventory: Path, forks: int, profile: bool, extra_vars: list, cpu: bool = False) -> dict:
    """One timed `ansible-playbook site.yml`: seconds, rc, changed per host, slowest tasks, and with
    cpu the CPU seconds of the controller and of the nodes."""
    extra = {"ANSIBLE_CALLBACKS_ENABLED": "ansible.posix.profile_tasks", "PROFILE_TASKS_TASK_OUTPUT_LIMIT": "8"} \
        if profile else {}
    playbook = shutil.which("ansible-playbook") or str(Path(sys.executable).with_name("ansible-playbook"))
    argv = [playbook, "-i", str(inventory), "--forks", str(forks), *(f"-e{value}" for value in extra_vars), "site.yml"]
    with tempfile.TemporaryDirectory(prefix="ncclkit-pacct-") as scratch:
        accounting = process_cpu.recording(Path(scratch) / "pacct") if cpu else contextlib.nullcontext()
        with accounting:
            start = time.monotonic()
            run = subprocess.run(argv, env=env_for(repo, **extra), cwd=repo, capture_output=True, text=True,
                                 check=False, timeout=1800)
            seconds = time.monotonic() - start
        split = process_cpu.controller_and_nodes(process_cpu.cpu_by_command(Path(scratch) / "pacct")) if cpu else None
    recap = {m[0]: int(m[2]) for m in RECAP.findall(run.stdout)}
    failed = sum(int(m[4]) + int(m[3]) for m in RECAP.findall(run.stdout))
    tasks = TASK_TIME.findall(run.stdout.split("PLAY RECAP")[-1]) if profile else []
    # The tasks each host executed (ok + skipped; a run_once task counts on its host only): a
    # deterministic figure beside the noisy times. The first host also runs the run_once tasks.
    per_host = {m[0]: int(m[1]) + int(m[5]) for m in RECAP.findall(run.stdout)}
    return {"seconds": seconds, "rc": run.returncode, "changed": sum(recap.values()), "failed": failed,
            "hosts": len(recap), "tasks": tasks[:8], "tail": failure(run.stdout) if run.returncode else "",
            "per_host": per_host, "cpu": split}


def failure(stdout: str) -> str:
    """The first failed task's lines (its message names the cause), then the end of the output."""
    first = stdout.find("fatal: [")
    return (stdout[max(first - 300, 0):first + 2500] + "\n...\n" if first >= 0 else "") + stdout[-1500:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=int, default=140)
    parser.add_argument("--nodes", type=int, nargs="+", default=[2, 16])
    parser.add_argument("--profile", action="store_true", help="print the slowest tasks of each run")
    parser.add_argument("--cpu", action="store_true",
                        help="split each run's CPU seconds into the controller's and the nodes' (needs accton)")
    parser.add_argument("--baseline", type=Path, help="another checkout to time alternately with this one")
    parser.add_argument("-e", "--extra-vars", action="append", default=[], metavar="NAME=VALUE",
                        help="ansible-playbook's -e for every run (e.g. a looser link gate: the lab's links "
                             "share the controller's cores, so at 16 nodes iperf3 measures CPU shares)")
    args = parser.parse_args()
    # A plain kill still takes the labs down (the finally below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))
    repos = {"this": REPO, **({"baseline": args.baseline.resolve()} if args.baseline else {})}
    labs = [(label, repo, nodes, args.index + i)
            for i, (label, repo, nodes) in enumerate((lb, r, n) for n in args.nodes for lb, r in repos.items())]
    print(f"cores: {os.cpu_count()}, load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}",
          flush=True)
    results = {}
    with tempfile.TemporaryDirectory(prefix="ncclkit-site-bench-") as folder:
        try:
            for dummy, repo, nodes, index in labs:
                inventory = Path(folder) / f"hosts-{index}.yml"
                lab(repo, "down", "--index", str(index))
                up = lab(repo, "up", "--index", str(index), "--nodes", str(nodes), "--inventory", str(inventory))
                if up.returncode:
                    raise SystemExit(f"lab up --index {index} failed: {up.stderr.strip()}")
            for which in ("first", "second"):
                for label, repo, nodes, index in labs:
                    result = site(repo, Path(folder) / f"hosts-{index}.yml", max(nodes, 5), args.profile,
                                  args.extra_vars, args.cpu)
                    results[label, nodes, which] = result
                    counts = result["per_host"].values()
                    print(f"{label} {nodes} nodes {which} run: {result['seconds']:.1f} s rc {result['rc']} "
                          f"changed {result['changed']} failed {result['failed']} "
                          f"load {os.getloadavg()[0]:.1f} tasks per host (ok+skipped) "
                          f"{min(counts, default=0)} to {max(counts, default=0)}", flush=True)
                    if result["cpu"]:
                        print(f"    CPU s: controller {result['cpu'][0]:.1f}, nodes {result['cpu'][1]:.1f}")
                    for task, secs in result["tasks"]:
                        print(f"    {secs}s  {task.strip()}")
                    if result["tail"]:
                        print(result["tail"])
        finally:
            for dummy, repo, dummy, index in labs:
                lab(repo, "down", "--index", str(index))
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print("| code | nodes | first run s | second run s | second run changed | rc (first, second) |")
    print("|---|---|---|---|---|---|")
    for label in repos:
        for nodes in args.nodes:
            first, second = results[label, nodes, "first"], results[label, nodes, "second"]
            print(f"| {label} | {nodes} | {first['seconds']:.1f} | {second['seconds']:.1f} | {second['changed']} "
                  f"| {first['rc']}, {second['rc']} |")
    small = min(args.nodes)
    for label in repos:
        for nodes in (n for n in args.nodes if n != small):
            for which, goal in (("first", 3), ("second", 2)):
                a, b = results[label, small, which]["seconds"], results[label, nodes, which]["seconds"]
                print(f"{label} {which} run {nodes}/{small} nodes: {b / a:.2f}x (goal {goal}x at 16), "
                      f"{(b - a) / (nodes - small):.2f} s per added host")
                small_cpu, big_cpu = results[label, small, which]["cpu"], results[label, nodes, which]["cpu"]
                if small_cpu and big_cpu:
                    added = [(big - little) / (nodes - small) for big, little in zip(big_cpu, small_cpu, strict=True)]
                    print(f"    CPU s per added host: controller {added[0]:.2f}, nodes {added[1]:.2f}; "
                          f"the {goal}x budget per added host on {os.cpu_count()} cores: "
                          f"{a * (goal - 1) / (nodes - small) * os.cpu_count():.2f} CPU s")


if __name__ == "__main__":
    main()
