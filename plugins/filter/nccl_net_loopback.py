# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Filters of nccl_validate's node-local NET test (nccl_validate_net_loopback); the logic is
plugins/module_utils/validate/loopback.py."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

# The module_utils are imported inside the filters, not here: Ansible imports every filter file of
# the collection in each worker that calls any of them (about 0.09 s CPU a worker, docs/benchmarks.md).


def nccl_net_loopback_plan(mpi, gpus, env_names, ifname=""):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.validate import loopback as nccl_net_loopback
    try:
        return nccl_net_loopback.plan(mpi if isinstance(mpi, dict) else {}, gpus, list(env_names or []), ifname or "")
    except ValueError as exc:
        raise AnsibleFilterError("nccl_net_loopback_plan: {0}".format(exc)) from exc


def nccl_mpmd_argv(argv, launcher_len, prefixes):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.validate import loopback as nccl_net_loopback
    try:
        return nccl_net_loopback.mpmd_argv(argv, launcher_len, prefixes or [])
    except ValueError as exc:
        raise AnsibleFilterError("nccl_mpmd_argv: {0}".format(exc)) from exc


class FilterModule:
    def filters(self):
        return {"nccl_net_loopback_plan": nccl_net_loopback_plan, "nccl_mpmd_argv": nccl_mpmd_argv}
