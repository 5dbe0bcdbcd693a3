"""The ncclkit.cluster.nccl_validate_argv filter: the command line of an nccl_validate benchmark run."""

from __future__ import annotations

DOCUMENTATION = r"""
name: nccl_validate_argv
short_description: The command line of an nccl_validate benchmark run
version_added: 0.3.0
author: ncclkit maintainers
description:
  - The launcher's argv, then the benchmark with nccl-tests' options C(-b) C(-e) C(-f) C(-g) C(-n)
    C(-w) C(-c), and C(-J) O(json_file) when O(json) (nccl-tests 2.17.3 and newer write JSON).
  - O(json) may be given as a string (C(true), C(no), ...), as the C(bool) filter reads it.
  - Sizes keep the form the user gave them (C(1G) stays C(1G)).
  - Runs on the controller; the logic is plugins/module_utils/validate/run.py.
positional: binary, sizes, gpus_per_process, json_file, json
options:
  _input:
    description: The launcher's argv (empty for a single-host run).
    type: list
    elements: str
    required: true
  binary:
    description: The benchmark's path.
    type: str
    required: true
  sizes:
    description: C(min_bytes), C(max_bytes), C(step_factor), C(iters), C(warmup_iters) and C(check).
    type: dict
    required: true
  gpus_per_process:
    description: The GPUs each process drives (C(-g)).
    type: int
    required: true
  json_file:
    description: Where nccl-tests writes its JSON output.
    type: str
    required: true
  json:
    description: Whether the benchmark writes JSON output (C(-J)).
    type: bool
    default: false
"""

EXAMPLES = r"""
_nccl_validate_argv: >-
  {{ _nccl_validate_launcher | ncclkit.cluster.nccl_validate_argv(_nccl_validate_binary, _nccl_validate_sizes,
     _nccl_validate_gpus_per_process, '/tmp/x/single.json', true) }}
# => ["/opt/nccl-tests/bin/all_reduce_perf", "-b", "8", "-e", "1G", "-f", "2", "-g", "8", "-n", "20", "-w", "5",
#     "-c", "1", "-J", "/tmp/x/single.json"]
"""

RETURN = r"""
_value:
  description: The argv of the run.
  type: list
  elements: str
"""

# The module_utils are imported inside the filters, not here: Ansible imports every filter file of
# the collection in each worker that calls any of them (about 0.09 s CPU a worker, docs/benchmarks.md).


def nccl_validate_argv(launcher, binary, sizes, gpus_per_process, json_file, json=False):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.run import benchmark_argv
    return benchmark_argv(list(launcher or []), binary, dict(sizes), gpus_per_process, json_file, json)


class FilterModule:
    def filters(self):
        return {"nccl_validate_argv": nccl_validate_argv}
