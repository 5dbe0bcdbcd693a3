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
    """{'rounds': [[[server, client], ...], ...], 'roles': {host: [{'role', 'peer'}, ...]}}."""
    plan = plan_rounds(hosts, int(rounds))
    return {"rounds": plan, "roles": {host: host_roles(plan, host) for host in hosts}}


def pair_blame(results, fraction=0.5, floor=0.0):
    return blame(results, float(fraction), float(floor))


def find_slow_decision(runs, setting, host_count):
    wanted, why = find_slow_wanted(setting, runs, int(host_count))
    return {"run": wanted, "why": why}


class FilterModule:
    def filters(self):
        return {"pair_rounds_plan": pair_rounds_plan, "pair_blame": pair_blame,
                "find_slow_decision": find_slow_decision}
