# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Which host measures link bandwidth to which, round by round.

Pure Python 3.8+ standard library. An iperf3 server serves one test at a time, so every round is
a permutation without fixed points: each host is the client of one test and the server of one.
Round 0 is the ring (host i measures host i+1); each further round is a random cycle through
all hosts, drawn from a seed, so that links the ring never uses are sampled too.

Every host computes the same plan from the same host list and seed: no coordination is needed
to agree on it. The generator is written out here (splitmix64 and Fisher-Yates) rather than
taken from `random`, so that hosts with different Python versions draw the same cycles.
Planning a round is O(N) (one shuffle); each host then runs one test per round, O(1) per host.

With two hosts one test (host 0 to host 1, both directions at once) covers the only link; a
second one at the same time would halve what each measures. With three, the ring already
covers every pair. Random rounds start at four hosts.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

_MASK = (1 << 64) - 1


def _splitmix64(state: int):
    """An endless stream of 64-bit numbers from `state` (Steele, Lea and Flood's splitmix64)."""
    while True:
        state = (state + 0x9E3779B97F4A7C15) & _MASK
        value = state
        value = ((value ^ (value >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        value = ((value ^ (value >> 27)) * 0x94D049BB133111EB) & _MASK
        yield value ^ (value >> 31)


def _cycle(count: int, seed: int, round_number: int) -> List[int]:
    """A random order of range(count): position j measures position j+1 (a cycle, no fixed point)."""
    order = list(range(count))
    stream = _splitmix64((seed * 1_000_003 + round_number) & _MASK)
    for last in range(count - 1, 0, -1):
        pick = next(stream) % (last + 1)
        order[last], order[pick] = order[pick], order[last]
    return order


def round_count(hosts: int, extra_rounds: int) -> int:
    """How many rounds run for `hosts` hosts: the ring plus `extra_rounds` random ones from four hosts."""
    if hosts < 2:
        return 0
    return 1 + (max(0, int(extra_rounds)) if hosts >= 4 else 0)


def plan_rounds(hosts: Sequence[str], extra_rounds: int = 2, seed: int = 0) -> List[Dict[str, str]]:
    """Every round as {client: server}. Round 0 is the ring; with two hosts it holds one test."""
    names = list(hosts)
    count = len(names)
    if len(set(names)) != count:
        raise ValueError("hosts must not repeat")
    rounds: List[Dict[str, str]] = []
    for number in range(round_count(count, extra_rounds)):
        order = list(range(count)) if number == 0 else _cycle(count, seed, number)
        pairs = {names[order[j]]: names[order[(j + 1) % count]] for j in range(count)}
        if count == 2:
            pairs = {names[0]: names[1]}
        rounds.append(pairs)
    return rounds


def my_tests(hosts: Sequence[str], me: str, extra_rounds: int = 2, seed: int = 0) -> List[Dict[str, object]]:
    """The tests `me` runs as client, in order: [{round, target}]."""
    return [{"round": number, "target": pairs[me]}
            for number, pairs in enumerate(plan_rounds(hosts, extra_rounds, seed)) if me in pairs]


def my_clients(hosts: Sequence[str], me: str, extra_rounds: int = 2, seed: int = 0) -> List[Optional[str]]:
    """Per round, the host that measures `me` (None where no one does)."""
    found: List[Optional[str]] = []
    for pairs in plan_rounds(hosts, extra_rounds, seed):
        found.append(next((client for client, server in pairs.items() if server == me), None))
    return found


def my_part(hosts: Sequence[str], me: str, extra_rounds: int = 2,
            seed: int = 0) -> Tuple[List[Dict[str, object]], List[Optional[str]]]:
    """my_tests and my_clients from one planning (what a host needs, O(N) per round)."""
    tests: List[Dict[str, object]] = []
    clients: List[Optional[str]] = []
    for number, pairs in enumerate(plan_rounds(hosts, extra_rounds, seed)):
        if me in pairs:
            tests.append({"round": number, "target": pairs[me]})
        clients.append(next((client for client, server in pairs.items() if server == me), None))
    return tests, clients
