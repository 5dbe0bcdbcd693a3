# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""The link-bandwidth gate: every host's iperf3 rounds -> the `link_bandwidth` record and verdicts.

Pure Python 3.8+ standard library. Each link test gives two figures, Gbit/s from the client to
the server (`sent_gbps`) and back (`received_gbps`), measured at once. The threshold is, first
match wins:

- `nccl_network_min_bandwidth_gbps` when set above 0 (source `nccl_network_min_bandwidth_gbps`);
- with three hosts or more, `median_fraction` (default 0.5) times the median of all figures
  (source `median`): a link that carries less than half of what the others carry is broken,
  whatever the hardware;
- with two hosts, where one link has no peers to compare with, `speed_fraction` (default 0.1)
  times the slower cluster NIC's speed as the kernel reports it (source `nic_speed`). The
  fraction is low on purpose: one TCP stream for one second fills a 10 Gbit/s NIC but not a
  100 Gbit/s one (20-40 Gbit/s is usual), so the floor catches a link ten times too slow, not
  one that is a third slower. A virtual NIC (no device behind it) or speed -1 is unknown: then
  no floor applies (source `none`) and a warning says so.

A link is slow when either of its figures is below the threshold; the verdict names both hosts
and both figures, and the host that is in most of the slow links when there is one (its `host`).

A verdict is a finding (common.findings.finding) with the pair's `source` and `target` added;
network.reachability.verdicts adds `ports` and `message`.
"""

from __future__ import annotations

import statistics
from typing import Dict, List, Optional, Tuple

from ansible_collections.ncclkit.cluster.plugins.module_utils.common.findings import finding

OVERRIDE = "nccl_network_min_bandwidth_gbps"


def judge_links(hosts: List[dict], results: Dict[str, Optional[dict]], median_fraction: float = 0.5,
                speed_fraction: float = 0.1, min_gbps: float = 0.0) -> Tuple[dict, List[dict]]:
    """hosts: [{name, ifname}] in play order; results: host -> nccl_reachability's result.
    Returns (link_bandwidth record, verdicts: findings with the pair's source and target)."""
    links, verdicts = [], []
    for host in hosts:
        failed = []
        for test in (results.get(host["name"]) or {}).get("links", []):
            if test.get("error") or test.get("sent_gbps") is None:
                failed.append(test)
                continue
            links.append({"source": host["name"], "target": test["target"], "round": int(test["round"]),
                          "sent_gbps": test["sent_gbps"], "received_gbps": test.get("received_gbps")})
        if failed:
            verdicts.append(_unmeasured(host["name"], failed))
    figures = [value for link in links for value in (link["sent_gbps"], link["received_gbps"]) if value is not None]
    median = round(statistics.median(figures), 3) if figures else None
    threshold, source, basis = _threshold(hosts, results, median, len(figures), median_fraction, speed_fraction,
                                          min_gbps)
    if figures and source == "none":
        verdicts.append(_verdict("link_floor_unknown", "warning", None, hosts[0]["name"] if hosts else None,
                                 f"the link between {' and '.join(h['name'] for h in hosts)} was measured "
                                 f"({_figures(links[0])}) but not judged: {basis}",
                                 f"set {OVERRIDE} to the least Gbit/s each direction must carry",
                                 evidence=[_figures(link) for link in links]))
    slow = []
    if threshold is not None:
        for link in links:
            gbps = min(value for value in (link["sent_gbps"], link["received_gbps"]) if value is not None)
            if gbps < threshold:
                slow.append({"source": link["source"], "target": link["target"], "gbps": gbps, "link": link})
    common, count = _common_host(slow)
    for item in slow:
        link = item.pop("link")
        cause = (f"TCP bandwidth between {link['source']} and {link['target']} is {_figures(link)}, below "
                 f"{threshold} Gbit/s ({basis})")
        if common:
            cause += (f"; {common} is in every slow link" if count == len(slow)
                      else f"; {common} is in {count} of the {len(slow)} slow links")
        verdicts.append(_verdict("slow_link", "error", link["source"], link["target"], cause,
                                 f"check {common or 'both hosts'}: the cluster NIC's speed and errors (ethtool), "
                                 "traffic shaping (tc qdisc show), the instance type's network bandwidth; "
                                 f"or set {OVERRIDE} to the least Gbit/s a link must carry",
                                 host=common, evidence=[_figures(link)]))
    record = {
        "measured": bool(figures), "links": links, "median_gbps": median,
        "threshold_gbps": threshold, "threshold_source": source, "slow": slow,
        "passed": (not slow) if figures and threshold is not None else None,
    }
    return record, verdicts


def _threshold(hosts, results, median, count, median_fraction, speed_fraction, min_gbps):
    """(threshold in Gbit/s or None, its source, the phrase that explains it)."""
    if min_gbps and float(min_gbps) > 0:
        return float(min_gbps), OVERRIDE, f"{OVERRIDE}"
    if median is None:
        return None, "none", "nothing was measured"
    if len(hosts) >= 3:
        return (round(float(median_fraction) * median, 3), "median",
                f"{median_fraction} x the median {median} Gbit/s of {count} figures")
    speeds = {host["name"]: (results.get(host["name"]) or {}).get("nic_speed_mbps") for host in hosts}
    unknown = sorted(name for name, speed in speeds.items() if not speed or speed <= 0)
    if unknown:
        nics = ", ".join(f"{name}'s {_ifname(hosts, name)}" for name in unknown)
        return None, "none", (f"with two hosts there is no median to compare with, and {nics} "
                              f"report{'s' if len(unknown) == 1 else ''} no speed (a virtual NIC, or -1)")
    slowest = min(speeds.values())
    return (round(float(speed_fraction) * slowest / 1000, 3), "nic_speed",
            f"{speed_fraction} x the NIC speed {slowest} Mbit/s")


def _common_host(slow):
    """(host, count): the host in most slow links when it is in two or more and in more than half
    of them, and no other host is in as many; else (None, 0). A shaped NIC shows in every link of
    its host, a moment of load in one."""
    counts: Dict[str, int] = {}
    for item in slow:
        for name in sorted({item["source"], item["target"]}):
            counts[name] = counts.get(name, 0) + 1
    ranked = sorted(counts.items(), key=lambda pair: -pair[1])
    if not ranked or ranked[0][1] < 2 or ranked[0][1] * 2 <= len(slow):
        return None, 0
    if len(ranked) > 1 and ranked[1][1] == ranked[0][1]:
        return None, 0
    return ranked[0]


def _unmeasured(name, failed):
    first = failed[0]
    targets = ", ".join(f"{test['target']} (round {test['round']})" for test in failed)
    return _verdict("bandwidth_unmeasured", "warning", name, first["target"],
                    f"iperf3 from {name} to {targets} failed: {first.get('error') or 'no figure'}",
                    "install iperf3 on every host (the role does) and keep its port inside the range",
                    host=name, evidence=[test.get("error") or "no figure" for test in failed])


def _figures(link):
    back = link.get("received_gbps")
    there = f"{link['sent_gbps']} Gbit/s {link['source']} -> {link['target']}"
    return there + (f" and {back} Gbit/s back" if back is not None else "")


def _ifname(hosts, name):
    return next((host.get("ifname") for host in hosts if host["name"] == name), None) or "cluster NIC"


def _verdict(code, severity, source, target, cause, fix, host=None, evidence=()):
    """A finding about the link source -> target; `host` is the one to look at when the figures name one."""
    return finding(code, severity, cause, fix, host=host, evidence=evidence, source=source, target=target)


def recorded(network) -> Optional[dict]:
    """The measured `link_bandwidth` of the ncclkit_network facts (host -> facts; the report host
    carries the cluster's record), or None: what the reports' link-bandwidth tables show."""
    for dummy, facts in sorted((network or {}).items()):
        record = facts.get("link_bandwidth") if isinstance(facts, dict) else None
        if isinstance(record, dict) and record.get("measured") and isinstance(record.get("links"), list):
            return record
    return None


def link_rows(record: dict) -> List[dict]:
    """The record's links for a table: each with `status` (slow or ok), slow ones first."""
    slow = {(item.get("source"), item.get("target")) for item in record.get("slow") or [] if isinstance(item, dict)}
    rows = [dict(link, status="slow" if (link.get("source"), link.get("target")) in slow else "ok")
            for link in record["links"] if isinstance(link, dict)]
    return sorted(rows, key=lambda row: (row["status"] != "slow", row.get("round") or 0, str(row.get("source"))))


def threshold_line(record: dict) -> str:
    """One sentence: the median, the threshold and where it came from, the verdict."""
    source = record.get("threshold_source")
    threshold = record.get("threshold_gbps")
    where = {"median": "a fraction of the median", "nic_speed": "a fraction of the NIC speed",
             OVERRIDE: OVERRIDE}.get(source, "no threshold")
    verdict = {True: "passed", False: "FAILED"}.get(record.get("passed"), "not judged")
    gate = f"threshold {threshold} Gbit/s ({where})" if threshold is not None else where
    return (f"{len(record.get('links') or [])} link(s) measured, median {record.get('median_gbps')} Gbit/s, "
            f"{gate}: {verdict}")
