# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Finding the slow node: pairwise runs in rounds, and whom their figures blame.

Pure Python 3.8+ standard library; deterministic (the same hosts give the same plan on every
host and every run).

Planning (`plan_rounds`): the circle method. Host 0 stays put and the others turn one place per
round, so every round is a perfect matching (each host in one pair, all pairs run at once) and no
two rounds repeat a pair. With an odd number of hosts a placeholder joins the circle: its partner
sits that round out, a different host each round. Three rounds (fewer where there are fewer
hosts) give each host up to three distinct partners: a node that is slow with all of them is told
apart from its partners, each of which has fast pairs too, even when two nodes are slow and meet
each other once. Planning a round is O(N); the rounds are O(1).

Blame (`blame`): the reference is the median over hosts of each host's best pair, which stays at
a healthy figure while fewer than half the hosts are slow (the median of all pairs would not:
every pair of a slow node is slow). A pair is slow below `fraction` of it (or below `floor`,
when given: the only test that means anything with two hosts). A host is slow when every pair it
ran is slow; it is named when one of its partners is not slow itself. Suspects whose every partner
is a suspect too (two hosts: one pair) cannot be told apart: they are reported as a group ("one of
node0, node1").
"""

from __future__ import annotations

import json
from statistics import median

from ansible_collections.ncclkit.cluster.plugins.module_utils.common.tristate import OFF, ON, tristate

DEFAULT_ROUNDS = 3
DEFAULT_FRACTION = 0.5


def plan_rounds(hosts, rounds=DEFAULT_ROUNDS):
    """A list of rounds, each a list of [a, b] pairs (a serves, b is the client), for `hosts` in order."""
    hosts = list(hosts)
    if len(set(hosts)) != len(hosts):
        raise ValueError("the hosts must be distinct, got {0}".format(hosts))
    if int(rounds) < 1:
        raise ValueError("rounds must be 1 or more, got {0}".format(rounds))
    circle = hosts + [None] if len(hosts) % 2 else list(hosts)
    size = len(circle)
    plan = []
    for number in range(min(int(rounds), max(size - 1, 0))):
        # Position i of round r holds others[(i + r) mod (size - 1)]; position 0 holds host 0.
        others = circle[1:]
        turned = [circle[0]] + [others[(i + number) % (size - 1)] for i in range(size - 1)]
        pairs = []
        for i in range(size // 2):
            a, b = turned[i], turned[size - 1 - i]
            if a is None or b is None:
                continue  # the partner of the placeholder sits this round out
            # Who serves alternates along the circle; --bidir measures both directions either way.
            pairs.append([a, b] if (i + number) % 2 == 0 else [b, a])
        plan.append(pairs)
    return plan


def host_roles(hosts, host, rounds=DEFAULT_ROUNDS):
    """Per round: {'role': 'server'|'client'|'idle', 'peer': name or ''} of `host`, the same as in
    plan_rounds(hosts, rounds) but found in O(1) per round (after finding `host`): each host keeps
    only its own part of the plan."""
    hosts = list(hosts)
    size = len(hosts) + len(hosts) % 2
    me = hosts.index(host)
    roles = []
    for number in range(min(int(rounds), max(size - 1, 0))):
        # Inverse of plan_rounds' turn: host index i > 0 sits at position ((i - 1 - r) mod (size - 1)) + 1.
        position = 0 if me == 0 else (me - 1 - number) % (size - 1) + 1
        other_position = size - 1 - position
        other = 0 if other_position == 0 else (other_position - 1 + number) % (size - 1) + 1
        if other >= len(hosts):
            roles.append({"role": "idle", "peer": ""})  # paired with the placeholder
            continue
        low = min(position, other_position)
        serves_first = (low + number) % 2 == 0
        first, second = (me, other) if position == low else (other, me)
        server = first if serves_first else second
        roles.append({"role": "server" if server == me else "client", "peer": hosts[other]})
    return roles


def blame(results, fraction=DEFAULT_FRACTION, floor=0.0, unit="Gbit/s"):
    """Judge the pair results: a list of {'hosts': [a, b], 'value': float or None, 'error': str}.

    A pair that failed (value None) counts as slow: a node that cannot finish a pair test is as
    bad as a slow one. Returns a dict: reference, threshold, pairs (each with slow), slow_hosts,
    groups (suspects that cannot be told apart), per_host (its values), reasons (one line each)
    and passed.
    """
    if not 0 < float(fraction) <= 1:
        raise ValueError("the fraction must be in (0, 1], got {0}".format(fraction))
    pairs = [dict(result, hosts=list(result["hosts"])) for result in results]
    values, of_host = {}, {}   # host -> its pairs' values, its pairs: one pass, so blame stays O(pairs)
    for pair in pairs:
        for host in pair["hosts"]:
            values.setdefault(host, []).append(pair.get("value"))
            of_host.setdefault(host, []).append(pair)
    best = [max(value for value in host_values if value is not None)
            for host_values in values.values() if any(value is not None for value in host_values)]
    reference = median(best) if best else 0.0
    threshold = max(float(fraction) * reference, float(floor))
    for pair in pairs:
        pair["slow"] = pair.get("value") is None or pair["value"] < threshold
    suspects = sorted(host for host in values if all(pair["slow"] for pair in of_host[host]))
    suspect_set = set(suspects)
    partners = {host: sorted({other for pair in of_host[host] for other in pair["hosts"] if other != host})
                for host in suspects}
    named = [host for host in suspects if any(partner not in suspect_set for partner in partners[host])]
    groups = _groups([host for host in suspects if host not in named], partners)
    reasons = []
    for host in named:
        reasons.append("{0} is slow: its pairs {1} vs median {2}".format(
            host, _figures(of_host[host], unit), _figure(reference, unit)))
    for group in groups:
        group_pairs = [pair for pair in pairs if set(pair["hosts"]) <= set(group)]  # few: suspects only
        reasons.append("one of {0} is slow: {1} {2} below {3} and no other partner to tell them apart "
                       "(add nodes, or test each against a known good node)".format(
                           ", ".join(group), "their pair" if len(group_pairs) == 1 else "their pairs",
                           _figures(group_pairs, unit), _figure(threshold, unit)))
    blamed = set(named) | {host for group in groups for host in group}
    for pair in pairs:
        if pair["slow"] and not blamed & set(pair["hosts"]):
            reasons.append("the link {0} - {1} is slow: {2} vs median {3} (both nodes are fast with others)".format(
                pair["hosts"][0], pair["hosts"][1], _figures([pair], unit), _figure(reference, unit)))
    return {"reference": reference, "threshold": threshold, "fraction": float(fraction), "floor": float(floor),
            "unit": unit, "pairs": pairs, "slow_hosts": named, "groups": groups,
            "per_host": {host: values[host] for host in sorted(values)}, "reasons": reasons,
            "passed": not reasons}


def _groups(hosts, partners):
    """Connected groups of suspects that only met each other."""
    left, groups = set(hosts), []
    for host in hosts:
        if host not in left:
            continue
        group, todo = set(), [host]
        while todo:
            current = todo.pop()
            if current in group:
                continue
            group.add(current)
            todo.extend(partner for partner in partners.get(current, []) if partner in left)
        left -= group
        groups.append(sorted(group))
    return groups


def _figure(value, unit):
    return "failed" if value is None else "{0:.2f} {1}".format(value, unit)


def _figures(pairs, unit):
    figures = [_figure(pair.get("value"), unit).replace(" " + unit, "") for pair in pairs]
    text = figures[0] if len(figures) == 1 else ", ".join(figures[:-1]) + " and " + figures[-1]
    return text + ("" if text.endswith("failed") else " " + unit)


def gpu_pair_argv(launcher, launcher_args, binary, pair, bench_args):
    """all_reduce_perf across the two hosts of `pair`, one rank each (-g 1), through the profile's
    launcher (ncclkit-mpirun, Open MPI style): the GPU form of a pair test."""
    if len(pair) != 2 or pair[0] == pair[1]:
        raise ValueError("a pair is two distinct hosts, got {0}".format(pair))
    return ([str(launcher), *[str(arg) for arg in launcher_args], "-np", "2", "-H", "{0}:1,{1}:1".format(*pair),
             str(binary), *[str(arg) for arg in bench_args], "-g", "1"])


def iperf3_bidir_gbps(text):
    """(forward, reverse) Gbit/s received in each direction of `iperf3 -c ... -J --bidir`; ValueError
    with iperf3's own error when it reported one."""
    try:
        data = json.loads(text)
    except ValueError:
        raise ValueError("iperf3 printed no JSON: {0}".format(text.strip()[:200] or "nothing"))
    if data.get("error"):
        raise ValueError("iperf3: {0}".format(data["error"]))
    end = data.get("end") or {}
    try:
        return (end["sum_received"]["bits_per_second"] / 1e9,
                end["sum_received_bidir_reverse"]["bits_per_second"] / 1e9)
    except (KeyError, TypeError):
        raise ValueError("iperf3's JSON has no --bidir sums (iperf3 3.7 or later is needed)")


# The bus-bandwidth gates of the multi-node runs that a slow node fails: nccl-tests'
# min_busbw_gbps, the Gloo run's min_busbw.
BUSBW_GATE_PREFIX = "min_busbw"


def find_slow_wanted(setting, runs, host_count):
    """(run it, why) for nccl_validate_find_slow: true, false or auto (when a multi-node run failed
    a bus-bandwidth gate), in any of common.tristate's words. Fewer than two hosts have no pair."""
    setting = tristate(setting, "nccl_validate_find_slow")
    if host_count < 2:
        return False, "one host: no pair to test"
    if setting == ON:
        return True, "asked for (nccl_validate_find_slow: true)"
    if setting == OFF:
        return False, "not asked for"
    for run in runs:
        gates = ((run.get("perf") or {}).get("gates") or []) if run.get("name") in ("multi", "gloo") else []
        failed = [gate for gate in gates
                  if not gate.get("passed") and str(gate.get("name", "")).startswith(BUSBW_GATE_PREFIX)]
        if failed:
            return True, "the multi-node gate failed: {0}".format(failed[0].get("message") or failed[0].get("name"))
    return False, "no multi-node bandwidth gate failed"


def find_slow_summary(found):
    """The report's heading for a slow-node search result (the dict `blame` returned, plus why)."""
    if found.get("passed"):
        return "no slow node"
    names = list(found.get("slow_hosts") or []) + ["one of " + ", ".join(group) for group in found.get("groups") or []]
    return "slow: " + "; ".join(names) if names else "FAILED"


def find_slow_rows(found):
    """(round, server, client, value, forward, reverse, verdict) per pair, in the order run."""
    rows = []
    for pair in sorted(found.get("pairs") or [], key=lambda pair: (pair.get("round") if isinstance(pair.get("round"), int) else -1,
                                                                   pair["hosts"])):
        verdict = "SLOW" if pair.get("slow") else "ok"
        if pair.get("error"):
            verdict += ": " + str(pair["error"])
        rows.append((pair.get("round", ""), pair["hosts"][0], pair["hosts"][1],
                     *(_rounded(pair.get(key)) for key in ("value", "forward_gbps", "reverse_gbps")), verdict))
    return rows


def _rounded(value):
    return round(value, 2) if isinstance(value, float) else value


def two_decimals(value):
    """A Gbit/s figure as the report shows it."""
    return "-" if value is None else "{0:.2f}".format(value)
