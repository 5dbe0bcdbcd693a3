"""validate.autotune_outcome: a winner must win again, or the defaults stay, and the reason says so."""

from __future__ import annotations

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.autotune import (
    RECORD_PATH,
    fingerprint,
    host_hardware,
)
from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.autotune_outcome import (
    NOT_CONFIRMED,
    OutcomeError,
    outcome,
)

CANDIDATES = [{"name": "defaults", "env": {}},
              {"name": "threads=2 socks=2", "env": {"NCCL_SOCKET_NTHREADS": "2", "NCCL_NSOCKS_PERTHREAD": "2"}}]
CONTEXT = {"reason": "no current result on n1", "repetitions": "5", "bytes": "512M", "transport": "any"}
GRID = {"decision": {"winner": "threads=2 socks=2", "reason": "beats the defaults by 1.2 GB/s", "table": [{"n": 1}]},
        "failures": [], "runs": 10, "ratios": {"threads=2 socks=2": {"median": 1.1}}}
SKIPPED = {"changed": False, "skipped": True, "skip_reason": "Conditional result was False"}


def test_a_winner_that_wins_again_is_kept_with_the_second_rounds_ratio():
    again = {"decision": {"winner": "threads=2 socks=2"}, "ratios": {"threads=2 socks=2": {"median": 1.15}}, "runs": 4}
    got = outcome(GRID, again, CANDIDATES, CONTEXT)
    assert got == {"status": "measured", "reason": "no current result on n1", "winner": "threads=2 socks=2",
                   "tuning": CANDIDATES[1]["env"], "decision_reason": "beats the defaults by 1.2 GB/s",
                   "candidates": [{"n": 1}], "failures": [], "remeasure": {"median": 1.15}, "runs": 14,
                   "repetitions": 5, "bytes": "512M", "transport": "any"}


def test_a_winner_that_loses_again_leaves_the_defaults_and_says_why():
    again = {"decision": {"winner": "defaults"}, "ratios": {"threads=2 socks=2": {"median": 1.01}}, "runs": 4}
    got = outcome(GRID, again, CANDIDATES, CONTEXT)
    assert (got["winner"], got["tuning"]) == ("defaults", {})
    assert got["decision_reason"] == "beats the defaults by 1.2 GB/s" + NOT_CONFIRMED
    assert "did not beat the defaults" in got["decision_reason"]
    # The second round's ratio of the grid's winner is still reported.
    assert got["remeasure"] == {"median": 1.01}


def test_the_defaults_winning_the_grid_need_no_second_round():
    grid = dict(GRID, decision={"winner": "defaults", "reason": "no candidate beats the spread", "table": []})
    got = outcome(grid, SKIPPED, CANDIDATES, CONTEXT)
    assert (got["winner"], got["tuning"], got["remeasure"], got["runs"]) == ("defaults", {}, None, 10)
    assert got["decision_reason"] == "no candidate beats the spread"


def test_a_grid_without_decision_or_an_unknown_winner_is_one_clear_error():
    with pytest.raises(OutcomeError, match="no decision: nccl_autotune: boom"):
        outcome({"msg": "nccl_autotune: boom"}, SKIPPED, CANDIDATES, CONTEXT)
    with pytest.raises(OutcomeError, match="'other' is not a candidate"):
        outcome(dict(GRID, decision={"winner": "other"}), {"decision": {"winner": "other"}}, CANDIDATES, CONTEXT)


FACTS = {"nccl_preflight_gpus": [{"name": "NVIDIA H200"}, {"name": "NVIDIA H200"}],
         "ncclkit_nccl": {"version": "2.28.9"}, "ncclkit_cluster_ifname": "eth1"}


def test_host_hardware_is_the_fingerprint_both_roles_computed_by_hand():
    # What nccl_validate's autotune.yml and nccl_profile's vars built in Jinja before.
    by_hand = fingerprint({"nodes": 2, "gpus": ["NVIDIA H200", "NVIDIA H200"], "nccl_version": "2.28.9",
                           "transport": "ib", "ifname": "eth1"})
    assert host_hardware(FACTS, 2, {"NCCL_IB_DISABLE": "0"}) == by_hand
    assert by_hand["gpus"] == "2 x NVIDIA H200" and by_hand["transport"] == "ib"


def test_host_hardware_without_facts_and_the_record_path():
    assert host_hardware({}, 0, None) == {"nodes": 0, "gpus": "0 x none", "nccl_version": "", "transport": "any",
                                          "nic": ""}
    assert RECORD_PATH == "/etc/ncclkit/autotune.json"
