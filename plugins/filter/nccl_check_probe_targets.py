"""The ncclkit.cluster.nccl_check_probe_targets filter: every host's probe targets for `ncclkit check`.

Documented in nccl_check_probe_targets.yml beside this file
(ansible-doc -t filter ncclkit.cluster.nccl_check_probe_targets).
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
# The module_utils are imported inside the filter, not here: Ansible imports every filter file of
# the collection in each worker that calls any of them.


def nccl_check_probe_targets(resolved, mode="ring"):
    """{host: {peer: the addresses the peer's host name resolves to}} from {host: those addresses},
    planned once for the play: O(N) for a ring."""
    from ansible_collections.ncclkit.cluster.plugins.module_utils.network.reachability.plan import MODES, probe_plan

    if not isinstance(resolved, dict):
        raise AnsibleFilterError(f"nccl_check_probe_targets: expected a map of host to addresses, got {type(resolved).__name__}")
    if mode not in MODES:
        raise AnsibleFilterError(f"nccl_check_probe_targets: mode {mode!r} is not one of {', '.join(MODES)}")
    return {host: {peer: list(resolved[peer] or []) for peer in peers}
            for host, peers in probe_plan(list(resolved), mode).items()}


class FilterModule:
    def filters(self):
        return {"nccl_check_probe_targets": nccl_check_probe_targets}
