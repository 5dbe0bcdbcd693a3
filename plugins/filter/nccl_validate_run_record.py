"""The ncclkit.cluster.nccl_validate_run_record filter: the record of a benchmark run that started."""

from __future__ import annotations

DOCUMENTATION = r"""
name: nccl_validate_run_record
short_description: The record of an nccl_validate benchmark run, from what its steps registered
version_added: 0.3.0
author: ncclkit maintainers
description:
  - Builds the entry of C(nccl_validate_runs) that report.yml reads for a run that started - its
    command, exit code, duration, the evidence of a hang, the parsed results (or why they could not
    be read), the diagnosis when one ran, the last lines of its log, and the report paths of the
    fetched files.
  - Runs on the controller; the logic is plugins/module_utils/validate/run.py.
positional: context, perf, diagnosis, fetched
options:
  _input:
    description: What M(ncclkit.cluster.nccl_run) registered.
    type: dict
    required: true
  context:
    description:
      - The run - C(name), C(host), C(hosts), C(command), C(timeout_s), C(expected_ranks),
        C(expected_transport), C(min_busbw_gbps).
    type: dict
    required: true
  perf:
    description: What M(ncclkit.cluster.nccl_perf) registered.
    type: dict
    required: true
  diagnosis:
    description: What M(ncclkit.cluster.nccl_diagnose) registered (a skipped task - no diagnosis).
    type: dict
    required: true
  fetched:
    description: What the fetch loop registered.
    type: dict
    required: true
"""

EXAMPLES = r"""
_nccl_validate_record: >-
  {{ __nccl_validate_run | ncclkit.cluster.nccl_validate_run_record(_nccl_validate_run_context,
     __nccl_validate_perf, __nccl_validate_diagnosis, __nccl_validate_fetched) }}
"""

RETURN = r"""
_value:
  description:
    - C(name), C(host), C(hosts), C(command), C(ran) (true), C(rc), C(timeout_s), C(duration_s),
      C(forensics), C(expected_ranks), C(expected_transport), C(min_busbw_gbps), C(perf) (nccl_perf's
      facts or null), C(perf_error) (null or why the output was unreadable), C(diagnosis)
      (C(findings) and C(hosts), or null), C(stderr_tail) and C(raw) (the fetched files, as
      C(raw/<host>/<file>)).
  type: dict
"""

# The module_utils are imported inside the filters, not here: Ansible imports every filter file of
# the collection in each worker that calls any of them (about 0.09 s CPU a worker, docs/benchmarks.md).


def nccl_validate_run_record(run, context, perf, diagnosis, fetched):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.run import run_record
    return run_record(run, dict(context), perf, diagnosis, fetched)


class FilterModule:
    def filters(self):
        return {"nccl_validate_run_record": nccl_validate_run_record}
