# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Filter: nccl_validate's gates, decided once for the cluster (plugins/module_utils/validate/gates.py).
Documented in nccl_validate_gates.yml."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

# The module_utils are imported inside the filters, not here: Ansible imports every filter file of
# the collection in each worker that calls any of them (about 0.09 s CPU a worker, docs/benchmarks.md).


def nccl_validate_gates(settings, ports_by_host, network_facts):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.gates import GateError, plan_gates
    try:
        return plan_gates(dict(settings or {}), dict(ports_by_host or {}), list(network_facts or []))
    except GateError as error:
        raise AnsibleFilterError(str(error)) from error


class FilterModule:
    def filters(self):
        return {"nccl_validate_gates": nccl_validate_gates}
