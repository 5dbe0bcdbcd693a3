# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""The autotune's outcome once measured: the grid's winner stays only if it wins again.

The grid (every candidate, interleaved) picks a winner; the winner and NCCL's defaults are then
measured once more with the same launcher. A winner that does not beat the defaults by more than
the spread that time leaves the defaults in place: one lucky round must not tune a cluster.

Pure Python 3.8+ standard library.
"""

from __future__ import annotations

from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.autotune import DEFAULTS

NOT_CONFIRMED = "; measured again it did not beat the defaults by more than the spread: the defaults stay"


class OutcomeError(ValueError):
    """A grid result without the decision the nccl_autotune module returns."""


def confirmed(measured, again):
    """Whether the grid's winner won again; the defaults need no second round (`again` skipped)."""
    second = ((again or {}).get("decision") or {}).get("winner", DEFAULTS)
    return second == measured["decision"]["winner"]


def outcome(measured, again, candidates, context):
    """nccl_validate_autotune_result for a measured grid: {status, reason, winner, tuning,
    decision_reason, candidates, failures, remeasure, runs, repetitions, bytes, transport}.

    `measured`, `again`: what nccl_autotune registered for the grid and for the second round
    (skipped when the defaults won); `candidates`: the grid ([{name, env}]); `context`: reason (why
    it measured: nccl_autotune_plan's), repetitions, bytes (the size measured) and transport."""
    measured, again = dict(measured or {}), dict(again or {})
    decision = measured.get("decision")
    if not isinstance(decision, dict) or "winner" not in decision:
        raise OutcomeError("the autotune's grid returned no decision: {0}".format(
            measured.get("msg") or "run the nccl_autotune task with -v to see its result"))
    won = confirmed(measured, again)
    name = decision["winner"] if won else DEFAULTS
    winner = next((candidate for candidate in candidates if candidate.get("name") == name), None)
    if winner is None:
        raise OutcomeError("the autotune's winner {0!r} is not a candidate of the grid".format(name))
    return {
        "status": "measured",
        "reason": context["reason"],
        "winner": winner["name"],
        "tuning": dict(winner.get("env") or {}),
        "decision_reason": str(decision.get("reason", "")) + ("" if won else NOT_CONFIRMED),
        "candidates": decision.get("table"),
        "failures": measured.get("failures"),
        "remeasure": (again.get("ratios") or {}).get(decision["winner"]),
        "runs": measured.get("runs", 0) + again.get("runs", 0),
        "repetitions": int(context["repetitions"]),
        "bytes": str(context["bytes"]),
        "transport": context["transport"],
    }
