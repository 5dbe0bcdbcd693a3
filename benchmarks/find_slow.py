#!/usr/bin/env python
"""Time to name the throttled node: nccl_validate's slow-node search on a 4- and an 8-node lab.

Run as root from the checkout (the shared venv's python):
    python benchmarks/find_slow.py [--nodes 4 8] [--slow node3] [--seconds 1] [--fraction 0.25]

For each N it brings up lab 46 (4 nodes) or 47 (8 nodes), throttles the
slow node's eth1 in its namespace (`tc qdisc add dev eth1 root tbf rate 100mbit burst 32kbit
latency 400ms`), runs nccl_validate with only the search (no GPU, no Gloo,
nccl_validate_find_slow: true) and times the play, takes the lab down, and prints a Markdown row:
nodes, rounds, pairs, play seconds, whom it named, the reference and the slow node's pairs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
INDICES = {4: 46, 8: 47}
THROTTLE = "tc qdisc add dev eth1 root tbf rate 100mbit burst 32kbit latency 400ms"
PLAYBOOK = """\
- name: Look for the slow node
  hosts: cluster
  gather_facts: false
  roles:
    - role: ncclkit.cluster.nccl_validate
"""


def env() -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "src"), str(REPO / "collections")]),
                ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1")


def ncclkit(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ncclkit.cli", *argv], env=env(), cwd=REPO,
                          capture_output=True, text=True, check=False)


def measure(nodes: int, slow: str, seconds: int, fraction: float) -> dict:
    index = INDICES[nodes]
    with tempfile.TemporaryDirectory(prefix="ncclkit-find-slow-bench-") as name:
        folder = Path(name)
        inventory = folder / "hosts.yml"
        up = ncclkit("lab", "up", "--index", str(index), "--nodes", str(nodes), "--inventory", str(inventory))
        if up.returncode:
            raise SystemExit(f"lab up failed: {up.stderr.strip()}")
        try:
            hosts = yaml.safe_load(inventory.read_text())["cluster"]["hosts"]
            (folder / "addresses.yml").write_text(yaml.safe_dump({"cluster": {"hosts": {
                host: {"ncclkit_cluster_ip": facts["ncclkit_lab_private_ip"]} for host, facts in hosts.items()}}}))
            (folder / "play.yml").write_text(PLAYBOOK)
            throttled = ncclkit("lab", "exec", slow, "--index", str(index), "--", *THROTTLE.split())
            if throttled.returncode:
                raise SystemExit(f"tc on {slow} failed: {throttled.stderr.strip()}")
            extra = {"ncclkit_gpu_capabilities": {"present": False, "count": 0}, "nccl_validate_gloo": False,
                     "nccl_validate_find_slow": True, "nccl_validate_find_slow_seconds": seconds,
                     "nccl_validate_find_slow_fraction": fraction}
            start = time.monotonic()
            played = subprocess.run([str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(inventory),
                                     "-i", str(folder / "addresses.yml"), str(folder / "play.yml"),
                                     "-e", json.dumps(extra)], env=dict(env(), PWD=str(folder)),
                                    cwd=folder, capture_output=True,
                                    text=True, check=False, timeout=900)
            wall = time.monotonic() - start
            report = json.loads(next((folder / "ncclkit-report").glob("2*/report.json")).read_text())
        finally:
            ncclkit("lab", "down", "--index", str(index))
    found = report.get("find_slow") or {}
    slow_pairs = [pair["value"] for pair in found.get("pairs", []) if slow in pair["hosts"]]
    return {"nodes": nodes, "rc": played.returncode, "seconds": wall, "rounds": len(found.get("rounds", [])),
            "pairs": len(found.get("pairs", [])), "named": found.get("slow_hosts"), "reference": found.get("reference"),
            "slow_pairs": slow_pairs, "last_reason": (report.get("reasons") or [""])[-1]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[4, 8], choices=sorted(INDICES))
    parser.add_argument("--slow", default="node3")
    parser.add_argument("--seconds", type=int, default=1)
    parser.add_argument("--fraction", type=float, default=0.25)
    args = parser.parse_args()
    print(f"load average at the start: {os.getloadavg()[0]:.1f}")
    print("| nodes | rounds | pairs | play s | named | median Gbit/s | slow node's pairs Gbit/s | exit |")
    print("|---|---|---|---|---|---|---|---|")
    for nodes in args.nodes:
        row = measure(nodes, args.slow, args.seconds, args.fraction)
        row_format = ("| {nodes} | {rounds} | {pairs} | {seconds:.1f} | {named} | {reference:.2f} | {pairs_text} "
                      "| {rc} |")
        print(row_format.format(
            pairs_text=", ".join(f"{value:.2f}" if value is not None else "failed" for value in row["slow_pairs"]),
            named=", ".join(row["named"] or []) or "nobody", **{k: v for k, v in row.items() if k != "named"}))
        print(f"  last reason: {row['last_reason']}", file=sys.stderr)
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
