#!/usr/bin/env python
"""How long `ncclkit check` takes on a fresh lab of N nodes (goal: under 15 s at 16 nodes).

Run as root from the checkout (the shared venv's python):
    python benchmarks/check_speed.py [--index 150] [--nodes 2 16] [--repeat 2] [--baseline DIR]

For each N it brings up lab K (a fresh one: no profile, the host names unreachable, so every
probe that can time out does), times `ncclkit check -i INV --json` REPEAT times, takes the lab
down, and prints a Markdown table (docs/benchmarks.md keeps one) plus each run's exit code.
With --baseline (another checkout, e.g. `git worktree add /tmp/base <commit>`), that checkout's
check runs on the same lab, alternating with this one's, so that the two are compared under the
same load and the ratio is what to quote.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def ncclkit(*argv: str, repo: Path = REPO, **kwargs) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(repo / "src"), str(repo / "collections")]),
               ANSIBLE_CONFIG=str(repo / "ansible.cfg"))
    return subprocess.run([sys.executable, "-m", "ncclkit.cli", *argv], env=env, cwd=repo,
                          capture_output=True, text=True, check=False, **kwargs)


def timed_check(inventory: Path, repo: Path) -> tuple:
    """(seconds, exit code, error codes) of one `ncclkit check` of `repo`'s code."""
    start = time.monotonic()
    run = ncclkit("check", "-i", str(inventory), "--json", repo=repo, timeout=300)
    seconds = time.monotonic() - start
    try:
        errors = {f["code"] for f in json.loads(run.stdout)["findings"] if f["severity"] == "error"}
    except (ValueError, KeyError):
        errors = {f"no JSON: {run.stderr.strip()[-200:]}"}
    return seconds, run.returncode, errors


def measure(index: int, nodes: int, repeat: int, repos: dict) -> list:
    with tempfile.TemporaryDirectory(prefix="ncclkit-check-bench-") as folder:
        inventory = Path(folder) / "hosts.yml"
        up = ncclkit("lab", "up", "--index", str(index), "--nodes", str(nodes), "--inventory", str(inventory))
        if up.returncode:
            raise SystemExit(f"lab up failed: {up.stderr.strip()}")
        try:
            runs = {label: {"nodes": nodes, "code": label, "times": [], "codes": [], "errors": set()}
                    for label in repos}
            for dummy in range(repeat):
                for label, repo in repos.items():
                    seconds, code, errors = timed_check(inventory, repo)
                    runs[label]["times"].append(seconds)
                    runs[label]["codes"].append(code)
                    runs[label]["errors"] |= errors
        finally:
            ncclkit("lab", "down", "--index", str(index))
    return list(runs.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=int, default=150)
    parser.add_argument("--nodes", type=int, nargs="+", default=[2, 16])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--baseline", type=Path, help="another checkout to time on the same labs, alternately")
    args = parser.parse_args()
    repos = {"this": REPO}
    if args.baseline:
        repos["baseline"] = args.baseline.resolve()
    print(f"cores: {os.cpu_count()}, load average before: {os.getloadavg()[0]:.1f}")
    rows = [row for nodes in args.nodes for row in measure(args.index, nodes, args.repeat, repos)]
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    print("| nodes | code | runs | median s | min s | max s | exit codes | error codes found |")
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        t = row["times"]
        print(f"| {row['nodes']} | {row['code']} | {len(t)} | {statistics.median(t):.1f} | {min(t):.1f} | {max(t):.1f} "
              f"| {', '.join(map(str, row['codes']))} | {', '.join(sorted(row['errors']))} |")
    if args.baseline:
        for nodes in args.nodes:
            medians = {row["code"]: statistics.median(row["times"]) for row in rows if row["nodes"] == nodes}
            print(f"{nodes} nodes: this / baseline = {medians['this'] / medians['baseline']:.2f}")


if __name__ == "__main__":
    main()
