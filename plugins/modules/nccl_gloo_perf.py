#!/usr/bin/python
# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Read the logs of nccl_validate's Gloo all-reduce into facts and gate them."""

from __future__ import annotations

DOCUMENTATION = r"""
module: nccl_gloo_perf
short_description: Read the logs of a Gloo all-reduce across nodes into facts and gate them
description:
  - Reads the C(ncclkit-gloo {...}) result line that each rank of nccl_validate's Gloo all-reduce
    prints (the validation of hosts without GPU), from the logs of all nodes read as one job.
  - Gates the run - every rank reported, every element correct, and, when asked, the slowest
    rank's bus bandwidth - and sets the C(nccl_gloo_perf) fact. It never fails on a gate; the
    role decides.
  - Only reads.
version_added: 0.2.0
author: ncclkit maintainers (!UNKNOWN)
extends_documentation_fragment:
  - ncclkit.cluster.attributes
options:
  path:
    description: The logs (stdout of every node's launcher); missing files count as empty.
    type: list
    elements: path
    required: true
  expected_ranks:
    description: Ranks the run must have (one per node).
    type: int
    required: true
  min_busbw_gbps:
    description: Lowest acceptable bus bandwidth in GB/s (0 = not gated).
    type: float
    default: 0
attributes:
  check_mode:
    support: full
    details: The module only reads, so it runs fully in check mode.
  diff_mode:
    support: none
"""

EXAMPLES = r"""
- name: Read the Gloo run of two nodes
  ncclkit.cluster.nccl_gloo_perf:
    path: [/tmp/report/raw/node1/gloo.txt, /tmp/report/raw/node2/gloo.txt]
    expected_ranks: 2
  delegate_to: localhost
"""

RETURN = r"""
ansible_facts:
  description: The facts set.
  returned: always
  type: dict
  contains:
    nccl_gloo_perf:
      description:
        - C(backend) (gloo), C(ranks), C(hosts), C(bytes), C(iters), C(seconds) (mean per all-reduce,
          slowest rank), C(peak_busbw_gbps) and C(algbw_gbps) (slowest rank), C(torch_version),
          C(gates) (name, passed, message) and C(passed).
      type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.gloo import gloo_perf

_MAX_BYTES = 64 << 20


def _lines(paths):
    for path in paths:
        try:
            with open(path, "rb") as handle:
                for raw in handle.read(_MAX_BYTES).splitlines():
                    yield raw.decode("utf-8", "replace")
        except OSError:
            continue


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="list", elements="path", required=True),
            expected_ranks=dict(type="int", required=True),
            min_busbw_gbps=dict(type="float", default=0.0),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if params["expected_ranks"] < 1 or params["min_busbw_gbps"] < 0:
        module.fail_json(msg="nccl_gloo_perf: expected_ranks must be at least 1 and min_busbw_gbps not negative "
                             "(got {0} and {1})".format(params["expected_ranks"], params["min_busbw_gbps"]))
    facts = gloo_perf(_lines(params["path"]), params["expected_ranks"], params["min_busbw_gbps"] or None)
    module.exit_json(changed=False, ansible_facts={"nccl_gloo_perf": facts})


if __name__ == "__main__":
    main()
