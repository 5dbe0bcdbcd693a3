#!/usr/bin/env python
"""How `site.yml`'s cost grows with the number of lab nodes: wall time, the controller's CPU seconds
per added host and the host-tasks a host, for the first and the second (converged) run.

Run as root from the checkout (the shared venv's python):
    python benchmarks/site_scale.py [--index 140] [--nodes 2 16 32] [--profile] [--cpu]
                                    [--baseline DIR | --baseline-rev REV] [--baseline-nodes N...]

For each size in turn it brings up one lab per code (indices INDEX, INDEX+1), runs `site.yml`
on them alternately (the first run of each code, then the second run of each), and takes them
down, so that a load from other users of the machine falls on both codes alike and the ratios
between the codes are what to quote. Each
run uses `forks` = the number of hosts; each second run must report changed=0. It prints the
load average, a Markdown table (docs/benchmarks.md keeps one), the ratios to the smallest lab and
the seconds per added host. --cpu measures the controller's CPU seconds of each run (the playbook,
its workers, its SSH clients and their ControlPersist masters: benchmarks/controller_cpu.py; the
nodes' own work, which on this machine shares its cores and on a real cluster does not, is not in
it) and prints the controller CPU seconds per added host. --acct adds the older split by the
kernel's process accounting (the `acct` package; it counts every process of those names on the
machine, another user's too). --profile enables the profile_tasks callback and prints each run's
slowest tasks. --baseline (another checkout, e.g. `git worktree add /tmp/base main`) or
--baseline-rev (a commit of this repository, checked out for the run in a temporary worktree)
runs that code's site.yml on labs of its own, alternated with this one's.
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
from controller_cpu import ControllerCpu

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


def site(repo: Path, inventory: Path, forks: int, profile: bool, extra_vars: list, cpu: bool = False,
         acct: bool = False) -> dict:
    """One timed `ansible-playbook site.yml`: seconds, rc, changed per host, slowest tasks, with cpu
    the controller's CPU seconds, and with acct process accounting's (controller, nodes) split."""
    extra = {"ANSIBLE_CALLBACKS_ENABLED": "ansible.posix.profile_tasks", "PROFILE_TASKS_TASK_OUTPUT_LIMIT": "8"} \
        if profile else {}
    playbook = shutil.which("ansible-playbook") or str(Path(sys.executable).with_name("ansible-playbook"))
    argv = [playbook, "-i", str(inventory), "--forks", str(forks), *(f"-e{value}" for value in extra_vars), "site.yml"]
    with tempfile.TemporaryDirectory(prefix="ncclkit-pacct-") as scratch:
        accounting = process_cpu.recording(Path(scratch) / "pacct") if acct else contextlib.nullcontext()
        # Each run's own ControlPersist masters (a second run must not reuse the first one's).
        extra["ANSIBLE_SSH_CONTROL_PATH_DIR"] = str(Path(scratch) / "cp")
        with accounting, (ControllerCpu() if cpu else contextlib.nullcontext()) as controller:
            start = time.monotonic()
            run = subprocess.run(argv, env=env_for(repo, **extra), cwd=repo, capture_output=True, text=True,
                                 check=False, timeout=1800)
            seconds = time.monotonic() - start
        split = process_cpu.controller_and_nodes(process_cpu.cpu_by_command(Path(scratch) / "pacct")) if acct else None
    recap = {m[0]: int(m[2]) for m in RECAP.findall(run.stdout)}
    failed = sum(int(m[4]) + int(m[3]) for m in RECAP.findall(run.stdout))
    tasks = TASK_TIME.findall(run.stdout.split("PLAY RECAP")[-1]) if profile else []
    # The tasks each host executed (ok + skipped; a run_once task counts on its host only): a
    # deterministic figure beside the noisy times. The first host also runs the run_once tasks.
    per_host = {m[0]: int(m[1]) + int(m[5]) for m in RECAP.findall(run.stdout)}
    return {"seconds": seconds, "rc": run.returncode, "changed": sum(recap.values()), "failed": failed,
            "hosts": len(recap), "tasks": tasks[:8], "tail": failure(run.stdout) if run.returncode else "",
            "per_host": per_host, "cpu": split, "controller": controller.seconds if cpu else None,
            # A host other than the first (which also runs the run_once tasks).
            "by_play": tasks_by_play(run.stdout, "node2")}


def _counts_for(host: str, line: str) -> bool:
    """Whether one line of play output is a task result (or an include) on that host."""
    name = re.escape(host)
    return bool(re.match(rf"(ok|changed|skipping|fatal): \[{name}\]", line)
                or re.match(rf"included: .* for .*\b{name}\b", line))


def tasks_by_play(stdout: str, host: str) -> list:
    """(play, the host-tasks `host` ran in it), counted as the recap counts them: a task's result (ok,
    changed, failed, skipped; a loop's items are one), an include's."""
    counts: list = []
    for line in stdout.splitlines():
        play = re.match(r"PLAY \[(.*)\] \*", line)
        if play:
            counts.append([play.group(1), 0])
        elif counts and "(item=" not in line and _counts_for(host, line):
            counts[-1][1] += 1
    return [(play, count) for play, count in counts if count]


def failure(stdout: str) -> str:
    """The first failed task's lines (its message names the cause), then the end of the output."""
    first = stdout.find("fatal: [")
    return (stdout[max(first - 300, 0):first + 2500] + "\n...\n" if first >= 0 else "") + stdout[-1500:]


def baseline_checkout(rev: str, folder: Path) -> Path:
    """A temporary worktree of this repository at `rev` (removed by `drop_checkout`)."""
    path = folder / "baseline"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(path), rev], check=True,
                   capture_output=True, text=True)
    return path


def drop_checkout(path: Path) -> None:
    subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(path)], check=False,
                   capture_output=True)


def host_tasks(result: dict) -> tuple:
    """(a host's host-tasks: the median over the hosts but the first, the first host's: the most, as it
    also runs the run_once tasks)."""
    counts = sorted(result["per_host"].values())
    if not counts:
        return 0, 0
    others = counts[:-1] or counts
    return others[(len(others) - 1) // 2], counts[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=int, default=140)
    parser.add_argument("--nodes", type=int, nargs="+", default=[2, 16])
    parser.add_argument("--profile", action="store_true", help="print the slowest tasks of each run")
    parser.add_argument("--cpu", action="store_true", help="the controller's CPU seconds of each run")
    parser.add_argument("--acct", action="store_true",
                        help="also split each run's CPU seconds into the controller's and the nodes' by process "
                             "accounting (needs accton)")
    baseline = parser.add_mutually_exclusive_group()
    baseline.add_argument("--baseline", type=Path, help="another checkout to time alternately with this one")
    baseline.add_argument("--baseline-rev", metavar="REV",
                          help="a commit of this repository to time alternately with this checkout (e.g. HEAD~1)")
    parser.add_argument("--baseline-nodes", type=int, nargs="+", metavar="N",
                        help="the sizes the baseline runs at (default: every size of --nodes)")
    parser.add_argument("-e", "--extra-vars", action="append", default=[], metavar="NAME=VALUE",
                        help="ansible-playbook's -e for every run (e.g. a looser link gate: the lab's links "
                             "share the controller's cores, so at 16 nodes iperf3 measures CPU shares)")
    args = parser.parse_args()
    # A plain kill still takes the labs down (the finally below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))
    print(f"cores: {os.cpu_count()}, load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}",
          flush=True)
    results = {}
    with tempfile.TemporaryDirectory(prefix="ncclkit-site-bench-") as folder:
        base = baseline_checkout(args.baseline_rev, Path(folder)) if args.baseline_rev else args.baseline
        repos = {"this": REPO, **({"baseline": base.resolve()} if base else {})}
        try:
            # One size at a time (its labs up, the runs, its labs down): a size's figures are whole
            # even if a later size does not finish, and fewer nodes share the machine at once.
            for nodes in args.nodes:
                labs = [(label, repo, args.index + i) for i, (label, repo) in enumerate(repos.items())
                        if label == "this" or not args.baseline_nodes or nodes in args.baseline_nodes]
                try:
                    for dummy, repo, index in labs:
                        inventory = Path(folder) / f"hosts-{index}.yml"
                        lab(repo, "down", "--index", str(index))
                        up = lab(repo, "up", "--index", str(index), "--nodes", str(nodes), "--inventory",
                                 str(inventory))
                        if up.returncode:
                            raise SystemExit(f"lab up --index {index} failed: {up.stderr.strip()}")
                    for which in ("first", "second"):
                        for label, repo, index in labs:
                            results[label, nodes, which] = timed(label, repo, nodes, which, Path(folder)
                                                                 / f"hosts-{index}.yml", args)
                finally:
                    for dummy, repo, index in labs:
                        lab(repo, "down", "--index", str(index))
        finally:
            if args.baseline_rev:
                drop_checkout(base)
            # Also when cut short: the sizes that finished.
            print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
            report(results, repos, args.nodes)


def timed(label: str, repo: Path, nodes: int, which: str, inventory: Path, args) -> dict:
    """One run of site.yml, printed as it ends."""
    result = site(repo, inventory, max(nodes, 5), args.profile, args.extra_vars, args.cpu, args.acct)
    counts = result["per_host"].values()
    print(f"{label} {nodes} nodes {which} run: {result['seconds']:.1f} s rc {result['rc']} "
          f"changed {result['changed']} failed {result['failed']} "
          f"load {os.getloadavg()[0]:.1f} tasks per host (ok+skipped) "
          f"{min(counts, default=0)} to {max(counts, default=0)}", flush=True)
    if result["controller"] is not None:
        print(f"    controller CPU s: {result['controller']:.1f}", flush=True)
    print("    node2's host-tasks by play: " + ", ".join(f"{play} {count}" for play, count in result["by_play"]))
    if result["cpu"]:
        print(f"    CPU s by accounting: controller {result['cpu'][0]:.1f}, nodes {result['cpu'][1]:.1f}")
    for task, secs in result["tasks"]:
        print(f"    {secs}s  {task.strip()}")
    if result["tail"]:
        print(result["tail"])
    return result


def report(results: dict, repos: dict, sizes: list) -> None:
    """The tables, per code over the sizes it finished (a run cut short leaves its size out)."""
    done = {label: [n for n in sizes if all((label, n, which) in results for which in ("first", "second"))]
            for label in repos}
    if not any(done.values()):
        return
    print("| code | nodes | first run s | second run s | second run changed | rc (first, second) "
          "| controller CPU s (first, second) | host-tasks a host, first host (first run; second run) |")
    print("|---|---|---|---|---|---|---|---|")
    for label in repos:
        for nodes in done[label]:
            first, second = results[label, nodes, "first"], results[label, nodes, "second"]
            cpu = (f"{first['controller']:.1f}, {second['controller']:.1f}" if first["controller"] is not None
                   else "")
            tasks = "; ".join("{}, {}".format(*host_tasks(run)) for run in (first, second))
            print(f"| {label} | {nodes} | {first['seconds']:.1f} | {second['seconds']:.1f} | {second['changed']} "
                  f"| {first['rc']}, {second['rc']} | {cpu} | {tasks} |")
    print("| code | nodes | run | wall ratio to the smallest | wall s per added host "
          "| controller CPU s per added host | host-tasks a host |")
    print("|---|---|---|---|---|---|---|")
    for label in repos:
        small = min(done[label], default=0)
        for nodes in (n for n in done[label] if n != small):
            for which in ("first", "second"):
                little, big = results[label, small, which], results[label, nodes, which]
                added = nodes - small
                cpu = (f"{(big['controller'] - little['controller']) / added:.2f}"
                       if big["controller"] is not None else "")
                print(f"| {label} | {nodes} | {which} | {big['seconds'] / little['seconds']:.2f}x "
                      f"| {(big['seconds'] - little['seconds']) / added:.2f} | {cpu} | {host_tasks(big)[0]} |")
                if little["cpu"] and big["cpu"]:
                    split = [(b - a) / added for b, a in zip(big["cpu"], little["cpu"], strict=True)]
                    print(f"    accounting's CPU s per added host: controller {split[0]:.2f}, nodes {split[1]:.2f}")
    if "baseline" in repos:
        for nodes in sorted(set(done["this"]) & set(done["baseline"])):
            for which in ("first", "second"):
                this, before = results["this", nodes, which], results["baseline", nodes, which]
                if this["controller"] is not None and before["controller"]:
                    print(f"this / baseline, {nodes} nodes, {which} run: controller CPU "
                          f"{this['controller'] / before['controller']:.2f}, "
                          f"wall {this['seconds'] / before['seconds']:.2f}")


if __name__ == "__main__":
    main()
