"""The slow-node search's plan (rounds of perfect matchings) and its blame, on made-up figures."""

from __future__ import annotations

import itertools

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.pair_rounds import (
    blame,
    gpu_pair_argv,
    host_roles,
    plan_rounds,
)

HOSTS = [f"node{i}" for i in range(8)]


def results(plan, slow=(), fast=10.0, slow_value=0.1, broken_links=()):
    """Pair results of `plan`: a pair with a slow node (or a broken link) runs at slow_value."""
    out = []
    for pair in itertools.chain.from_iterable(plan):
        bad = set(pair) & set(slow) or tuple(sorted(pair)) in broken_links
        out.append({"hosts": pair, "value": slow_value if bad else fast})
    return out


@pytest.mark.parametrize("count", [2, 3, 4, 5, 7, 8, 9, 16, 101])
def test_each_round_pairs_every_node_once_and_no_pair_repeats(count):
    hosts = [f"h{i}" for i in range(count)]
    plan = plan_rounds(hosts)
    assert len(plan) == min(3, count - 1 if count % 2 == 0 else count)
    seen = set()
    for pairs in plan:
        in_round = [host for pair in pairs for host in pair]
        assert len(in_round) == len(set(in_round))      # nobody twice in a round
        assert len(in_round) == count - count % 2       # everybody, but one with odd N
        for pair in pairs:
            assert frozenset(pair) not in seen
            seen.add(frozenset(pair))
    if count % 2:   # the one who sits out is a different host each round
        idle = [next(iter(set(hosts) - {h for pair in pairs for h in pair})) for pairs in plan]
        assert len(set(idle)) == len(idle)


@pytest.mark.parametrize("count", [2, 3, 4, 5, 7, 8, 11, 16])
@pytest.mark.parametrize("rounds", [1, 3, 20])
def test_each_host_finds_its_own_part_of_the_plan(count, rounds):
    hosts = [f"h{i}" for i in range(count)]
    plan = plan_rounds(hosts, rounds)
    assert plan == plan_rounds(list(hosts), rounds)   # deterministic
    for host in hosts:
        expected = []
        for pairs in plan:
            role = {"role": "idle", "peer": ""}
            for server, client in pairs:
                if host == server:
                    role = {"role": "server", "peer": client}
                elif host == client:
                    role = {"role": "client", "peer": server}
            expected.append(role)
        assert host_roles(hosts, host, rounds) == expected


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="distinct"):
        plan_rounds(["a", "a"])
    with pytest.raises(ValueError, match="rounds"):
        plan_rounds(["a", "b"], rounds=0)
    with pytest.raises(ValueError, match="fraction"):
        blame([], fraction=0)


@pytest.mark.parametrize("count", [3, 4, 5, 8, 9])
@pytest.mark.parametrize("slow_index", [0, 1, -1])
def test_one_slow_node_is_named_alone(count, slow_index):
    hosts = HOSTS[:count] if count <= 8 else [f"h{i}" for i in range(count)]
    slow = hosts[slow_index]
    verdict = blame(results(plan_rounds(hosts), slow=[slow]))
    assert not verdict["passed"]
    assert verdict["slow_hosts"] == [slow] and verdict["groups"] == []
    assert verdict["reference"] == 10.0 and verdict["threshold"] == 5.0
    assert len(verdict["reasons"]) == 1
    assert verdict["reasons"][0].startswith(f"{slow} is slow: its pairs 0.10")
    assert verdict["reasons"][0].endswith("Gbit/s vs median 10.00 Gbit/s")


def test_the_message_gives_every_pair_of_the_slow_node():
    plan = plan_rounds(HOSTS[:4])
    figures = iter([0.09, 0.10, 0.11])
    pairs = [{"hosts": pair, "value": next(figures) if "node3" in pair else 1.2} for pair in sum(plan, [])]
    assert blame(pairs, unit="GB/s")["reasons"] == [
        "node3 is slow: its pairs 0.09, 0.10 and 0.11 GB/s vs median 1.20 GB/s"]


def test_two_slow_nodes_are_both_named():
    verdict = blame(results(plan_rounds(HOSTS), slow=["node2", "node5"]))
    assert verdict["slow_hosts"] == ["node2", "node5"] and verdict["groups"] == []


def test_two_slow_nodes_of_four_that_meet_are_still_named():
    plan = plan_rounds(HOSTS[:4])
    verdict = blame(results(plan, slow=["node0", "node1"]))
    assert verdict["slow_hosts"] == ["node0", "node1"]


def test_a_healthy_cluster_passes_with_noise():
    plan = plan_rounds(HOSTS)
    pairs = [{"hosts": pair, "value": 10.0 + 0.7 * (i % 3)} for i, pair in enumerate(sum(plan, []))]
    verdict = blame(pairs)
    assert verdict["passed"] and verdict["reasons"] == [] and verdict["slow_hosts"] == []


def test_two_nodes_can_only_say_one_of_them():
    plan = plan_rounds(["node0", "node1"])
    assert plan == [[["node0", "node1"]]]
    # Against its own median one pair is never slow: only a floor can fail it.
    assert blame(results(plan, slow=["node1"]))["passed"]
    verdict = blame(results(plan, slow=["node1"]), floor=1.0)
    assert verdict["slow_hosts"] == [] and verdict["groups"] == [["node0", "node1"]]
    assert verdict["reasons"] == ["one of node0, node1 is slow: their pair 0.10 Gbit/s below 1.00 Gbit/s and no "
                                  "other partner to tell them apart (add nodes, or test each against a known good "
                                  "node)"]


def test_one_round_cannot_tell_a_slow_node_from_its_partner():
    plan = plan_rounds(HOSTS[:4], rounds=1)
    verdict = blame(results(plan, slow=["node3"]))
    assert verdict["slow_hosts"] == [] and verdict["groups"] == [["node0", "node3"]]


def test_a_slow_link_between_good_nodes_names_the_link_not_a_node():
    plan = plan_rounds(HOSTS[:4])
    verdict = blame(results(plan, broken_links=[("node1", "node2")]))
    assert verdict["slow_hosts"] == [] and not verdict["passed"]
    assert verdict["reasons"][0].startswith("the link ") and "node1" in verdict["reasons"][0]


def test_a_failed_pair_counts_as_slow():
    plan = plan_rounds(HOSTS[:4])
    pairs = [{"hosts": pair, "value": None if "node2" in pair else 5.0, "error": "refused"}
             for pair in sum(plan, [])]
    verdict = blame(pairs)
    assert verdict["slow_hosts"] == ["node2"]
    assert verdict["reasons"] == ["node2 is slow: its pairs failed, failed and failed vs median 5.00 Gbit/s"]


def test_gpu_pair_argv_runs_one_rank_on_each_host_through_the_launcher():
    argv = gpu_pair_argv("/opt/ncclkit/bin/ncclkit-mpirun", ["-x", "NCCL_DEBUG"], "/opt/nccl-tests/all_reduce_perf",
                         ["node0", "node3"], ["-b", "512M", "-e", "512M", "-n", 20])
    assert argv == ["/opt/ncclkit/bin/ncclkit-mpirun", "-x", "NCCL_DEBUG", "-np", "2", "-H", "node0:1,node3:1",
                    "/opt/nccl-tests/all_reduce_perf", "-b", "512M", "-e", "512M", "-n", "20", "-g", "1"]
    with pytest.raises(ValueError, match="two distinct"):
        gpu_pair_argv("m", [], "b", ["node0", "node0"], [])
