# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Filters of nccl_validate's slow-node search; the logic is plugins/module_utils/validate/pair_rounds.py."""

from __future__ import annotations

# The module_utils are imported inside the filters, not here: Ansible imports every filter file of
# the collection in each worker that calls any of them (about 0.09 s CPU a worker, docs/benchmarks.md).


def pair_rounds_plan(hosts, rounds=3):
    """[[[server, client], ...], ...]: the whole plan (for the report, made once)."""
    from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.pair_rounds import plan_rounds
    return plan_rounds(hosts, int(rounds))


def pair_rounds_roles(hosts, host, rounds=3):
    """[{'role', 'peer'}, ...]: `host`'s own part of the plan, one entry per round."""
    from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.pair_rounds import host_roles
    return host_roles(hosts, host, int(rounds))


def pair_blame(results, fraction=0.5, floor=0.0):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.pair_rounds import blame
    return blame(results, float(fraction), float(floor))


def find_slow_decision(runs, setting, host_count):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.pair_rounds import find_slow_wanted
    wanted, why = find_slow_wanted(setting, runs, int(host_count))
    return {"run": wanted, "why": why}


class FilterModule:
    def filters(self):
        return {"pair_rounds_plan": pair_rounds_plan, "pair_rounds_roles": pair_rounds_roles, "pair_blame": pair_blame,
                "find_slow_decision": find_slow_decision}
