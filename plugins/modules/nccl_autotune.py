#!/usr/bin/python
# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Run a grid of NCCL tuning candidates through the multi-node launcher and choose one."""

from __future__ import annotations

DOCUMENTATION = r"""
module: nccl_autotune
short_description: Measure NCCL tuning candidates with nccl-tests and choose the one that beats the defaults
description:
  - Runs the benchmark under the launcher once per candidate and repetition, the repetitions
    interleaved (every candidate once, then every candidate again) so that a drift of the
    machine weighs on all of them alike. Each candidate's variables are set in the launcher's
    environment and forwarded to every rank with C(-x NAME).
  - Reads each output (the nccl-tests parser of M(ncclkit.cluster.nccl_perf)) and keeps its peak
    busbw, the out-of-place busbw at the largest size; a run that failed, timed out or had the
    wrong number of ranks counts as a failed repetition.
  - Decides with the rule of C(plugins/module_utils/validate/autotune.py) C(choose) - a candidate
    replaces NCCL's defaults only if its median beats theirs by more than the spread (max - min)
    of either's repetitions; the highest such median wins; else the defaults stay.
  - Changes nothing on the host; its outputs go to O(chdir), which the caller removes.
version_added: 0.3.0
author: ncclkit maintainers (!UNKNOWN)
extends_documentation_fragment:
  - ncclkit.cluster.attributes
options:
  launcher:
    description: The launcher's argv (C(ncclkit-mpirun) and its options), before the C(-x) options.
    type: list
    elements: str
    required: true
  benchmark:
    description: The benchmark and its arguments (C(all_reduce_perf -b 512M -e 512M ...)).
    type: list
    elements: str
    required: true
  rank_prefixes:
    description:
      - Per rank, words put before the benchmark in its own Open MPI app context
        (the launcher, then PREFIX0 BENCHMARK, a colon, PREFIX1 BENCHMARK), as the node-local NET
        test launches its two ranks; empty, one app context for all ranks.
    type: list
    elements: list
    default: []
  env:
    description: Environment of every run (the profile and the run's logging settings).
    type: dict
    default: {}
  candidates:
    description:
      - The candidates, each C({name, env}); one must be named C(defaults) with an empty env.
    type: list
    elements: dict
    required: true
  repetitions:
    description: Runs of each candidate (at least 3, for a spread to mean something).
    type: int
    default: 3
  expected_ranks:
    description: Ranks each run must report; 0 does not check.
    type: int
    default: 0
  timeout_s:
    description: Seconds each run may take before it is stopped (a failed repetition).
    type: float
    default: 300
  chdir:
    description: Existing folder for the outputs (a scratch folder the caller removes).
    type: path
    required: true
attributes:
  check_mode:
    support: full
    details: Nothing runs in check mode.
  diff_mode:
    support: none
notes:
  - Socket variables on RDMA transports are the caller's to leave out (C(nccl_autotune_grid) does).
"""
EXAMPLES = r"""
- name: Measure the grid on the launch host
  ncclkit.cluster.nccl_autotune:
    launcher: [/opt/ncclkit/bin/ncclkit-mpirun, -x, NCCL_DEBUG]
    benchmark: [/opt/ncclkit/nccl-tests/build/all_reduce_perf, -b, 512M, -e, 512M, -g, "1", -n, "20", -w, "5"]
    candidates: "{{ 'any' | ncclkit.cluster.nccl_autotune_grid }}"
    repetitions: 3
    expected_ranks: 16
    chdir: /tmp/ncclkit-autotune
"""
RETURN = r"""
results:
  description: Each candidate's peak busbw (GB/s) per repetition, null for a failed one.
  returned: when run
  type: dict
  sample: {defaults: [2.99, 3.01, 2.97], "threads=2 socks=4": [2.1, 2.08, 2.12]}
decision:
  description: The rule's decision - C(winner) (a candidate name), C(reason), C(table) (per candidate median, spread, margin, beats).
  returned: when run
  type: dict
ratios:
  description: For each candidate but the defaults, C({ratio, low, high}) of its busbw to the defaults'.
  returned: when run
  type: dict
failures:
  description: One line per failed repetition (candidate, repetition, why).
  returned: when run
  type: list
  elements: str
runs:
  description: How many benchmark runs were made.
  returned: always
  type: int
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.bounded_run import BoundedRunError, run_bounded
from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.autotune import DEFAULTS, choose, ratio
from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.loopback import mpmd_argv
from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests.output import NcclTestsParseError, parse_file


def _peak(path, expected_ranks):
    """(peak busbw, '') of a complete run, else (None, why)."""
    try:
        runs = parse_file(path)
    except NcclTestsParseError as error:
        return None, str(error)
    if not runs:
        return None, "no nccl-tests output"
    run = runs[-1]
    if not run.get("complete") or run.get("largest_size_busbw_gbps") is None:
        return None, "incomplete run: " + "; ".join(run.get("errors") or ["no footer"])
    if expected_ranks and run.get("ranks") != expected_ranks:
        return None, "{0} ranks, expected {1}".format(run.get("ranks"), expected_ranks)
    return float(run["largest_size_busbw_gbps"]), ""


def measure(params, runner=run_bounded):
    """{results, failures, runs}: every candidate once per round, `repetitions` rounds."""
    base_env = dict(os.environ, **{str(k): str(v) for k, v in params["env"].items()})
    results = {candidate["name"]: [] for candidate in params["candidates"]}
    failures, count = [], 0
    for repetition in range(params["repetitions"]):
        for index, candidate in enumerate(params["candidates"]):
            names = sorted(candidate.get("env") or {})
            forward = [item for name in names for item in ("-x", name)]
            launcher = list(params["launcher"]) + forward
            argv = mpmd_argv(launcher + list(params["benchmark"]), len(launcher), params.get("rank_prefixes") or [])
            env = dict(base_env, **{name: str(candidate["env"][name]) for name in names})
            out = os.path.join(params["chdir"], "autotune-{0}-{1}.txt".format(index, repetition))
            err = out[:-4] + ".stderr.txt"
            outcome = runner(argv, out, err, params["timeout_s"], 10.0, env, params["chdir"], False)
            count += 1
            peak, why = _peak(out, params["expected_ranks"])
            if outcome["rc"] != 0:
                peak, why = None, "rc {0}{1}".format(outcome["rc"], " (timed out)" if outcome["timed_out"] else "")
            if peak is None:
                failures.append("{0}, repetition {1}: {2}".format(candidate["name"], repetition + 1, why))
            results[candidate["name"]].append(peak)
            for path in (out, err):
                if os.path.exists(path):
                    os.unlink(path)
    return {"results": results, "failures": failures, "runs": count}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            launcher=dict(type="list", elements="str", required=True),
            benchmark=dict(type="list", elements="str", required=True),
            rank_prefixes=dict(type="list", elements="list", default=[]),
            env=dict(type="dict", default={}),
            candidates=dict(type="list", elements="dict", required=True),
            repetitions=dict(type="int", default=3),
            expected_ranks=dict(type="int", default=0),
            timeout_s=dict(type="float", default=300.0),
            chdir=dict(type="path", required=True),
        ),
        supports_check_mode=True,
    )
    params = module.params
    names = [candidate.get("name") for candidate in params["candidates"]]
    if DEFAULTS not in names or len(set(names)) != len(names) or not all(names):
        module.fail_json(msg="nccl_autotune: candidates need distinct names and one named defaults (got {0})"
                         .format(", ".join(map(str, names))))
    if params["repetitions"] < 3 or params["timeout_s"] <= 0 or not params["benchmark"]:
        module.fail_json(msg="nccl_autotune: repetitions must be at least 3, timeout_s above 0 and benchmark "
                         "not empty (got {0}, {1})".format(params["repetitions"], params["timeout_s"]))
    if module.check_mode:
        module.exit_json(changed=False, skipped=True, runs=0,
                         msg="check mode: would run {0} candidates {1} times".format(len(names), params["repetitions"]))
    try:
        measured = measure(params)
    except BoundedRunError as error:
        module.fail_json(msg="nccl_autotune: {0}".format(error), runs=0)
    results = measured["results"]
    ratios = {name: ratio(values, results[DEFAULTS]) for name, values in results.items() if name != DEFAULTS}
    module.exit_json(changed=False, decision=choose(results), ratios=ratios, **measured)


if __name__ == "__main__":
    main()
