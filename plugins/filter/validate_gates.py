# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Filter: nccl_validate's gates, decided once for the cluster (plugins/module_utils/validate_gates.py).
Documented in nccl_validate_gates.yml."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.ncclkit.cluster.plugins.module_utils.validate_gates import (
    GateError,
    plan_gates,
)


def nccl_validate_gates(settings, ports_by_host, network_facts):
    try:
        return plan_gates(dict(settings or {}), dict(ports_by_host or {}), list(network_facts or []))
    except GateError as error:
        raise AnsibleFilterError(str(error)) from error


class FilterModule:
    def filters(self):
        return {"nccl_validate_gates": nccl_validate_gates}
