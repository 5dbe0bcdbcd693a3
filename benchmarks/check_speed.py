#!/usr/bin/env python
"""How long `ncclkit check` takes on a fresh lab of N nodes (goal: under 15 s at 16 nodes).

Run as root from the checkout (the shared venv's python):
    python benchmarks/check_speed.py [--index 150] [--nodes 2 16] [--repeat 2]

For each N it brings up lab K (a fresh one: no profile, the host names unreachable, so every
probe that can time out does), times `ncclkit check -i INV --json` REPEAT times, takes the lab
down, and prints a Markdown table (docs/benchmarks.md keeps one) plus each run's exit code.
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


def ncclkit(*argv: str, **kwargs) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "src"), str(REPO / "collections")]))
    return subprocess.run([sys.executable, "-m", "ncclkit.cli", *argv], env=env, cwd=REPO,
                          capture_output=True, text=True, check=False, **kwargs)


def measure(index: int, nodes: int, repeat: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="ncclkit-check-bench-") as folder:
        inventory = Path(folder) / "hosts.yml"
        up = ncclkit("lab", "up", "--index", str(index), "--nodes", str(nodes), "--inventory", str(inventory))
        if up.returncode:
            raise SystemExit(f"lab up failed: {up.stderr.strip()}")
        try:
            times, codes, errors = [], [], set()
            for dummy in range(repeat):
                start = time.monotonic()
                run = ncclkit("check", "-i", str(inventory), "--json", timeout=300)
                times.append(time.monotonic() - start)
                codes.append(run.returncode)
                try:
                    errors |= {f["code"] for f in json.loads(run.stdout)["findings"] if f["severity"] == "error"}
                except (ValueError, KeyError):
                    errors.add(f"no JSON: {run.stderr.strip()[-200:]}")
        finally:
            ncclkit("lab", "down", "--index", str(index))
    return {"nodes": nodes, "times": times, "codes": codes, "errors": sorted(errors)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=int, default=150)
    parser.add_argument("--nodes", type=int, nargs="+", default=[2, 16])
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    rows = [measure(args.index, nodes, args.repeat) for nodes in args.nodes]
    print(f"cores: {os.cpu_count()}, load average before: {os.getloadavg()[0]:.1f}")
    print("| nodes | runs | median s | min s | max s | exit codes | error codes found |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        t = row["times"]
        print(f"| {row['nodes']} | {len(t)} | {statistics.median(t):.1f} | {min(t):.1f} | {max(t):.1f} "
              f"| {', '.join(map(str, row['codes']))} | {', '.join(row['errors'])} |")


if __name__ == "__main__":
    main()
