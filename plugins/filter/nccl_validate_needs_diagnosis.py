"""The ncclkit.cluster.nccl_validate_needs_diagnosis filter: whether a benchmark run's output is diagnosed."""

from __future__ import annotations

DOCUMENTATION = r"""
name: nccl_validate_needs_diagnosis
short_description: Whether nccl_diagnose reads a benchmark run's output
version_added: 0.3.0
author: ncclkit maintainers
description:
  - True for a run that failed (non-zero C(rc), or none), whose output nccl_perf could not read or
    whose gates failed, and for a run that expects a transport (O(expected_transport) not C(any))
    even when it passed - a multi-node run on IB/eRDMA/EFA hosts that silently fell back to sockets
    is a failure.
  - Runs on the controller; the logic is plugins/module_utils/validate/run.py.
positional: perf, expected_transport
options:
  _input:
    description: What M(ncclkit.cluster.nccl_run) registered.
    type: dict
    required: true
  perf:
    description: What M(ncclkit.cluster.nccl_perf) registered.
    type: dict
    required: true
  expected_transport:
    description: The transport the run should use between hosts (C(any), C(ib), C(efa)).
    type: str
    required: true
"""

EXAMPLES = r"""
when: __nccl_validate_run | ncclkit.cluster.nccl_validate_needs_diagnosis(__nccl_validate_perf, 'any')
"""

RETURN = r"""
_value:
  description: Whether to diagnose the run.
  type: bool
"""

# The module_utils are imported inside the filters, not here: Ansible imports every filter file of
# the collection in each worker that calls any of them (about 0.09 s CPU a worker, docs/benchmarks.md).


def nccl_validate_needs_diagnosis(run, perf, expected_transport):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.run import needs_diagnosis
    return needs_diagnosis(run, perf, expected_transport)


class FilterModule:
    def filters(self):
        return {"nccl_validate_needs_diagnosis": nccl_validate_needs_diagnosis}
