#!/usr/bin/env python
"""How long nccl_network's reachability check takes on lab clusters, healthy and broken.

Run as root from the checkout (after `make install`):
    .venv/bin/python benchmarks/network_diagnosis.py [--index 23] [--repeat 3] [--nodes 2 16]

For each case it brings up a lab, runs nccl_preflight + nccl_network once to set the cluster up
(not timed), breaks what the case breaks, then runs the check alone (`--tags
nccl_preflight,nccl_network_diagnose`) and reads from Ansible's JSON output the time from the
start of the probe task to the end of the verdict task (the last task of the role), and the
check's own time on the slowest host. Prints a Markdown table (docs/benchmarks.md keeps one).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
from ncclkit.lab import Lab  # noqa: E402

PLAYBOOK = REPO / "tests" / "lab" / "playbooks" / "network.yml"
FIRST, LAST = "Probe the cluster network from every host at once", "Fail when the cluster network is broken"
VARIABLES = {"nccl_network_install_packages": False}
BREAKS = {
    "healthy": None,
    # One port dropped by hand on the second node: the verdict names it and its firewall.
    "port blocked on one node": ("node2", "nft 'table inet handblock { chain input { type filter hook input "
                                          "priority 0; tcp dport 46883 drop; }; }'"),
    # Every NCCL port dropped both ways: nothing carries the barrier, so hosts wait its timeout.
    "all ports dropped both ways": ("*", "nft 'table inet handblock { chain input { type filter hook input "
                                         "priority 0; tcp dport { 29500, 32768-60999 } drop; }; }'"),
}


def stamp(text):
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()


def run(inventory, *args):
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json"}
    argv = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), str(PLAYBOOK),
            "-e", json.dumps(VARIABLES), *args]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, env=env, timeout=900, check=False)
    return json.loads(done.stdout)


def timing(report):
    tasks = [task for play in report["plays"] for task in play["tasks"]]

    def named(name):
        return [t for t in tasks if t["task"]["name"].endswith(name)]

    start = stamp(named(FIRST)[0]["task"]["duration"]["start"])
    end = stamp(named(LAST)[-1]["task"]["duration"]["end"])
    own = max(result["reachability"]["elapsed_s"] for result in named(FIRST)[0]["hosts"].values())
    # The verdicts are stored once, on the host that ncclkit_network's report_host names.
    recorded = [result["ansible_facts"]["ncclkit_network"]
                for result in named("Record ncclkit_network for the roles that follow")[-1]["hosts"].values()]
    codes = sorted({v["code"] for facts in recorded for v in facts.get("verdicts", [])})
    return end - start, own, codes


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=int, default=23)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--nodes", type=int, nargs="+", default=[2, 16])
    args = parser.parse_args()
    rows = []
    cases = [(n, "healthy") for n in args.nodes] + [(2, name) for name in BREAKS if name != "healthy"]
    for nodes, case in cases:
        lab = Lab(args.index)
        lab.down()
        with tempfile.TemporaryDirectory() as tmp:
            inventory = Path(tmp) / "hosts.yml"
            try:
                lab.up(nodes=nodes, inventory_path=inventory)
                run(inventory)
                if BREAKS[case]:
                    where, script = BREAKS[case]
                    for node in ([f"node{i}" for i in range(1, nodes + 1)] if where == "*" else [where]):
                        lab.exec(node, ["sh", "-c", script], check=True)
                samples = [timing(run(inventory, "--tags", "nccl_preflight,nccl_network_diagnose"))
                           for dummy in range(args.repeat)]
            finally:
                lab.down()
        checks, owns = [s[0] for s in samples], [s[1] for s in samples]
        rows.append((nodes, case, statistics.median(checks), max(checks), statistics.median(owns), samples[0][2]))
        print(f"{nodes} nodes, {case}: {statistics.median(checks):.1f} s", file=sys.stderr)
    print("| nodes | case | check to verdict, median (s) | worst (s) | module on slowest host, median (s) | verdicts |")
    print("|---|---|---|---|---|---|")
    for nodes, case, median, worst, own, codes in rows:
        print(f"| {nodes} | {case} | {median:.1f} | {worst:.1f} | {own:.1f} | {', '.join(codes) or 'none'} |")


if __name__ == "__main__":
    main()
