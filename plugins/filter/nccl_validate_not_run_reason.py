"""The ncclkit.cluster.nccl_validate_not_run_reason filter: why a benchmark run cannot start."""

from __future__ import annotations

DOCUMENTATION = r"""
name: nccl_validate_not_run_reason
short_description: Say why an nccl_validate benchmark run cannot start, and the fix
version_added: 0.3.0
author: ncclkit maintainers
description:
  - Returns an empty string when the run can start. Otherwise one line naming the cause and the
    fix, checked in this order - no nccl-tests on the host (C(bin_dir) of O(host_view) empty), no
    launcher for the multi-node run, the benchmark or the launcher missing or not executable.
  - Runs on the controller; the logic is plugins/module_utils/validate/run.py.
positional: host_view, run_name, launcher, host
options:
  _input:
    description: The results of the stat loop over the benchmark and the launcher (each with C(item) and C(stat)).
    type: list
    elements: dict
    required: true
  host_view:
    description: The C(nccl_validate_host) fact (C(bin_dir), C(nccl_tests.reason)).
    type: dict
    required: true
  run_name:
    description: The run, C(single) or C(multi).
    type: str
    required: true
  launcher:
    description: The launcher's argv (empty for a single-host run).
    type: list
    elements: str
    required: true
  host:
    description: The inventory name of the host, for the message.
    type: str
    required: true
"""

EXAMPLES = r"""
_nccl_validate_not_run_reason: >-
  {{ __nccl_validate_programs.results | ncclkit.cluster.nccl_validate_not_run_reason(nccl_validate_host,
     _nccl_validate_run_name, _nccl_validate_launcher, inventory_hostname) }}
# => "/opt/nccl-tests/bin/all_reduce_perf is missing or not executable on node1: run the nccl_tests and ..."
"""

RETURN = r"""
_value:
  description: The cause and the fix in one line; empty when the run can start.
  type: str
"""

# The module_utils are imported inside the filters, not here: Ansible imports every filter file of
# the collection in each worker that calls any of them (about 0.09 s CPU a worker, docs/benchmarks.md).


def nccl_validate_not_run_reason(stat_results, host_view, run_name, launcher, host):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.run import not_run_reason
    return not_run_reason(list(stat_results or []), host_view, run_name, list(launcher or []), host)


class FilterModule:
    def filters(self):
        return {"nccl_validate_not_run_reason": nccl_validate_not_run_reason}
