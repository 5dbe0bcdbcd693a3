"""The link-bandwidth rounds: permutations, every host client once and server once per round."""

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.network.links.rounds import (
    my_clients,
    my_part,
    my_tests,
    plan_rounds,
    round_count,
)


def names(count):
    return [f"n{i}" for i in range(count)]


@pytest.mark.parametrize("count", [4, 5, 16, 101])
def test_every_round_is_a_permutation_without_fixed_points(count):
    hosts = names(count)
    rounds = plan_rounds(hosts, extra_rounds=3, seed=7)
    assert len(rounds) == 4
    for pairs in rounds:
        assert sorted(pairs) == sorted(hosts) and sorted(pairs.values()) == sorted(hosts)
        assert all(client != server for client, server in pairs.items())
    assert rounds[0] == {hosts[i]: hosts[(i + 1) % count] for i in range(count)}


def test_the_plan_is_the_same_for_the_same_seed_and_differs_for_another():
    hosts = names(32)
    assert plan_rounds(hosts, 2, seed=1) == plan_rounds(list(hosts), 2, seed=1)
    assert plan_rounds(hosts, 2, seed=1)[1:] != plan_rounds(hosts, 2, seed=2)[1:]
    assert plan_rounds(hosts, 2, seed=1)[1] != plan_rounds(hosts, 2, seed=1)[2]


def test_the_draws_are_fixed_across_python_versions():
    # Written out generator, not `random`: these cycles must never change, or hosts with another
    # ncclkit or Python would wait for clients that measure someone else.
    expected = {"n0": "n1", "n1": "n3", "n3": "n2", "n2": "n4", "n4": "n5", "n5": "n0"}
    assert plan_rounds(names(6), 1, seed=0)[1] == expected


def test_random_rounds_reach_links_the_ring_never_uses():
    hosts = names(16)
    ring = {frozenset(pair) for pair in plan_rounds(hosts, 0)[0].items()}
    sampled = {frozenset(pair) for pairs in plan_rounds(hosts, 2, seed=0)[1:] for pair in pairs.items()}
    assert len(sampled - ring) >= 20


@pytest.mark.parametrize(("count", "extra", "expected"), [(1, 2, 0), (2, 2, 1), (3, 2, 1), (4, 2, 3), (4, 0, 1),
                                                          (9, -1, 1)])
def test_small_clusters_run_only_the_ring(count, extra, expected):
    assert round_count(count, extra) == expected
    assert len(plan_rounds(names(count), extra)) == expected


def test_two_hosts_run_one_test_so_that_it_has_the_link_alone():
    assert plan_rounds(["a", "b"], 2) == [{"a": "b"}]
    assert my_tests(["a", "b"], "b") == [] and my_clients(["a", "b"], "b") == ["a"]
    assert my_clients(["a", "b"], "a") == [None]


def test_each_host_sees_its_own_part_of_the_plan():
    hosts = names(8)
    rounds = plan_rounds(hosts, 2, seed=3)
    for me in hosts:
        assert my_tests(hosts, me, 2, 3) == [{"round": r, "target": pairs[me]} for r, pairs in enumerate(rounds)]
        clients = my_clients(hosts, me, 2, 3)
        assert all(rounds[r][client] == me for r, client in enumerate(clients))
        assert my_part(hosts, me, 2, 3) == (my_tests(hosts, me, 2, 3), clients)


def test_repeated_hosts_are_refused():
    with pytest.raises(ValueError, match="repeat"):
        plan_rounds(["a", "b", "a"])
