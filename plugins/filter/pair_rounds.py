# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Filters of nccl_validate's slow-node search; the logic is plugins/module_utils/pair_rounds.py."""

from __future__ import annotations

from ansible_collections.ncclkit.cluster.plugins.module_utils.pair_rounds import (
    blame,
    find_slow_wanted,
    host_roles,
    plan_rounds,
)


def pair_rounds_plan(hosts, rounds=3):
    """[[[server, client], ...], ...]: the whole plan (for the report, made once)."""
    return plan_rounds(hosts, int(rounds))


def pair_rounds_roles(hosts, host, rounds=3):
    """[{'role', 'peer'}, ...]: `host`'s own part of the plan, one entry per round."""
    return host_roles(hosts, host, int(rounds))


def pair_blame(results, fraction=0.5, floor=0.0):
    return blame(results, float(fraction), float(floor))


def find_slow_decision(runs, setting, host_count):
    wanted, why = find_slow_wanted(setting, runs, int(host_count))
    return {"run": wanted, "why": why}


class FilterModule:
    def filters(self):
        return {"pair_rounds_plan": pair_rounds_plan, "pair_rounds_roles": pair_rounds_roles, "pair_blame": pair_blame,
                "find_slow_decision": find_slow_decision}
