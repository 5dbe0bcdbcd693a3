"""Filters of `ncclkit check` (nccl_preflight's check step); the logic is in module_utils.check_findings."""

from __future__ import annotations

# The module_utils are imported inside the filters, not here: Ansible imports every filter file of
# the collection in each worker that calls any of them (about 0.09 s CPU a worker, docs/benchmarks.md).


def nccl_check_master(profile_master, first_cluster_ip, port):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.check.findings import choose_master
    return choose_master(dict(profile_master or {}), str(first_cluster_ip or ""), int(port))


class FilterModule:
    def filters(self):
        return {"nccl_check_master": nccl_check_master}
