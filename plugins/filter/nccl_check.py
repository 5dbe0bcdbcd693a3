"""Filters of `ncclkit check` (nccl_preflight's check step); the logic is in module_utils.check_findings."""

from __future__ import annotations

from ansible_collections.ncclkit.cluster.plugins.module_utils.check_findings import choose_master


class FilterModule:
    def filters(self):
        return {"nccl_check_master": lambda profile_master, first_cluster_ip, port:
                choose_master(dict(profile_master or {}), str(first_cluster_ip or ""), int(port))}
