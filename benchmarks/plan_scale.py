#!/usr/bin/env python
"""What ncclkit's planning costs at 1,000 and 10,000 hosts, computed without running anything.

Run from the checkout (any python with the collection on the path):
    python benchmarks/plan_scale.py [--hosts 16 1000 10000]

For each cluster size it times, and measures the peak memory of (tracemalloc), the pieces a run
plans or judges, on synthetic hosts (an eth0 /32 with the default route and an eth1 on a shared
/8, as clouds give them):
- the cluster NIC of every host, decided once on the controller (filter `cluster_nics`);
- the reachability plan one host computes for itself (`probe_peers`, `expected_probers`), and the
  probes each host sends and answers, counted over every host;
- the link-bandwidth rounds (`network.links.rounds`: the whole plan, and one host's part);
- the slow-node search's pair rounds (`pair_rounds.plan_rounds`, one host's `host_roles`) and its
  blame over every pair with one slow host (which it must name);
- the network report: `build_report` over every host's probe results (ring: O(N) rows).
It prints a Markdown table (docs/benchmarks.md keeps one). The claim it checks: planning and
judging grow as O(N) overall, and what one host sends is O(1) (the first host, torchrun's
rendezvous, answers every host).
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "collections"))

from ansible_collections.ncclkit.cluster.plugins.filter.cluster_nics import cluster_nics  # noqa: E402
from ansible_collections.ncclkit.cluster.plugins.module_utils import link_rounds, pair_rounds  # noqa: E402
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.reachability.plan import (  # noqa: E402
    expected_probers,
    probe_peers,
)
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.reachability.verdicts import build_report  # noqa: E402

PORTS = ["29500", "32768", "46883", "60999"]


def address(i: int) -> str:
    return f"10.{i // 62500}.{(i // 250) % 250}.{i % 250 + 1}"


def nics(i: int) -> list:
    return [{"name": "lo", "ipv4": [{"address": "127.0.0.1", "prefix": 8}], "loopback": True, "up": True, "mtu": 65536},
            {"name": "eth0", "ipv4": [{"address": f"172.16.{i // 250}.{i % 250 + 1}", "prefix": 32}], "up": True,
             "default_route": True, "mtu": 1500},
            {"name": "eth1", "ipv4": [{"address": address(i), "prefix": 8}], "up": True, "mtu": 9000}]


def measured(step):
    """(seconds, peak MiB, result) of step()."""
    tracemalloc.start()
    start = time.perf_counter()
    result = step()
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return seconds, peak, result


def probe_results(hosts: list, ring: dict) -> dict:
    results = {}
    for name in hosts:
        probes = [{"peer": peer, "address": address(int(peer[4:])), "route_dev": "eth1", "route_error": None,
                   "ping": True, "ping_large": True, "large_size": 8972, "ports": dict.fromkeys(PORTS, "ok"),
                   "alternates": [], "bandwidth_gbps": None, "bandwidth_error": None} for peer in ring[name]]
        results[name] = {"host": name, "mtu": 9000, "listeners": dict.fromkeys(PORTS, "ok"), "probes": probes,
                         "firewall": {"active": [], "drops": []}, "links": [], "nic_speed_mbps": 100000}
    return results


def plan(count: int) -> list:
    hosts = [f"gpu-{i:05d}" for i in range(count)]
    me = hosts[count // 2]
    rows = []

    hostvars = {name: {"nccl_preflight_nics": nics(i)} for i, name in enumerate(hosts)}
    seconds, peak, chosen = measured(lambda: cluster_nics(hostvars, hosts))
    assert all(choice.get("ifname") == "eth1" for choice in chosen.values())
    rows.append(("cluster NIC of every host (controller, once)", seconds, peak, "-"))

    seconds, peak, dummy = measured(lambda: (probe_peers(hosts, me), expected_probers(hosts, me)))
    ring = {name: probe_peers(hosts, name) for name in hosts}
    answered = {name: 0 for name in hosts}
    for peers in ring.values():
        for peer in peers:
            answered[peer] += 1
    sent = max(len(peers) for peers in ring.values())
    others = max(n for name, n in answered.items() if name != hosts[0])
    rows.append(("reachability plan of one host", seconds, peak,
                 f"sends {sent}, answers {others} (first host {answered[hosts[0]]})"))

    seconds, peak, rounds = measured(lambda: link_rounds.plan_rounds(hosts, 2))
    per_host = max(sum(1 for r in rounds if name in r) for name in hosts[:50])
    rows.append((f"link rounds, whole plan ({len(rounds)} rounds)", seconds, peak, f"{per_host} test(s) per host"))
    seconds, peak, dummy = measured(lambda: link_rounds.my_part(hosts, me, 2))
    rows.append(("link rounds, one host's part", seconds, peak, "-"))

    seconds, peak, pairs = measured(lambda: pair_rounds.plan_rounds(hosts, 3))
    rows.append((f"slow-node pair rounds, whole plan ({len(pairs)} rounds)", seconds, peak,
                 f"{sum(len(r) for r in pairs)} pairs, 1 per host per round"))
    seconds, peak, dummy = measured(lambda: pair_rounds.host_roles(hosts, me, 3))
    rows.append(("slow-node pair rounds, one host's roles", seconds, peak, "-"))
    slow = hosts[7 % count]
    results = [{"hosts": pair, "value": 0.1 if slow in pair else 10.0 + (i % 7) * 0.1, "error": ""}
               for i, pair in enumerate(p for r in pairs for p in r)]
    seconds, peak, judged = measured(lambda: pair_rounds.blame(results))
    assert judged["slow_hosts"] == [slow], judged["slow_hosts"]
    rows.append(("slow-node blame over every pair", seconds, peak, f"names {slow}"))

    host_list = [{"name": name, "address": address(i), "ifname": "eth1", "mtu": 9000} for i, name in enumerate(hosts)]
    results = probe_results(hosts, ring)
    seconds, peak, report = measured(lambda: build_report(host_list, results, rendezvous_ports=[29500]))
    assert report["passed"]
    rows.append(("network report (matrix and verdicts)", seconds, peak, f"{len(report['matrix'])} rows"))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[16, 1000, 10000])
    args = parser.parse_args(argv)
    print("| hosts | step | seconds | peak MiB | per host |")
    print("|---:|---|---:|---:|---|")
    for count in args.hosts:
        for step, seconds, peak, note in plan(count):
            print(f"| {count} | {step} | {seconds:.3f} | {peak:.1f} | {note} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
