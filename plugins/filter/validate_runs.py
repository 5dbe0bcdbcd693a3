"""Filter: one outcome for a run that every host starts its own part of (nccl_validate's Gloo run)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: combined_run
short_description: One outcome from the nccl_run results of every host of a run
description:
  - Takes the registered M(ncclkit.cluster.nccl_run) result of each host (in the order of O(hosts))
    and returns the run's outcome - C(rc) (124 or 137 when any host's deadline passed, else the
    first host's non-zero code, else 0), C(timed_out), C(duration_s) (the longest), C(forensics)
    (every host's evidence lines) and C(stderr_tail) (the last lines of the first failed host,
    prefixed with its name).
  - A host without a result (it failed before the run) counts as rc -1.
positional: hosts
options:
  _input:
    description: The nccl_run results, one per host.
    type: list
    elements: dict
    required: true
  hosts:
    description: The host names, in the same order.
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
outcome: "{{ ansible_play_hosts | map('extract', hostvars) | map(attribute='__run', default={}) | list
             | ncclkit.cluster.combined_run(ansible_play_hosts) }}"
"""

RETURN = r"""
_value:
  description: rc, timed_out, duration_s, forensics and stderr_tail.
  type: dict
"""


def combined_run(results, hosts):
    outcome = {"rc": 0, "timed_out": False, "duration_s": 0.0, "forensics": [], "stderr_tail": []}
    first_failed = None
    for host, result in zip(hosts, results):
        result = result if isinstance(result, dict) else {}
        rc = result.get("rc", -1) if isinstance(result.get("rc", -1), int) else -1
        outcome["duration_s"] = max(outcome["duration_s"], float(result.get("duration_s") or 0))
        outcome["forensics"].extend(result.get("forensics") or [])
        if result.get("timed_out"):
            # KILL anywhere means TERM was not enough somewhere: the stronger code wins.
            outcome["rc"] = max(outcome["rc"], rc) if outcome["timed_out"] else rc
            outcome["timed_out"] = True
        elif rc != 0 and not outcome["timed_out"] and outcome["rc"] == 0:
            outcome["rc"] = rc
        if rc != 0 and first_failed is None:
            first_failed = host
            tail = result.get("stderr_lines") or ([result["msg"]] if result.get("msg") else [])
            outcome["stderr_tail"] = ["{0}: {1}".format(host, line) for line in tail]
    return outcome


class FilterModule:
    def filters(self):
        return {"combined_run": combined_run}
