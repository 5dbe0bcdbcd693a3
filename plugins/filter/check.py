# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Filters of `ncclkit check` (nccl_preflight's check step) over module_utils/check: the master,
the probe targets, the judge."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

# The module_utils are imported inside the filters, not here: Ansible imports every filter file of
# the collection in each worker that calls any of them (about 0.09 s CPU a worker, docs/benchmarks.md).


def nccl_check_master(profile_master, first_cluster_ip, port):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.check.findings import choose_master
    return choose_master(dict(profile_master or {}), str(first_cluster_ip or ""), int(port))


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


def nccl_check_path_targets(hostvars, hosts, mode="ring"):
    """{host: {"mtu": its cluster NIC's MTU, "peers": {peer: cluster address}, "ports": {peer: [port]}}}
    for the path-MTU echoes and the connections to the peers' ephemeral ports, to the same ring
    neighbours as the host-name pings, planned once for the play."""
    from ansible_collections.ncclkit.cluster.plugins.module_utils.check.findings import path_targets
    from ansible_collections.ncclkit.cluster.plugins.module_utils.network.reachability.plan import probe_plan

    hosts = list(hosts)
    nics = {}
    for name in hosts:
        facts = hostvars[name]
        own = next((nic for nic in facts.get("nccl_preflight_nics") or []
                    if nic.get("name") == facts.get("ncclkit_cluster_ifname")), {})
        # A cloud role that changed the MTU after nccl_preflight says so in ncclkit_cluster_mtu.
        nics[name] = {"cluster_ip": facts.get("ncclkit_cluster_ip", ""),
                      "mtu": facts.get("ncclkit_cluster_mtu") or own.get("mtu"),
                      "port_range": (facts.get("ncclkit_container") or {}).get("ip_local_port_range")}
    return path_targets(nics, probe_plan(hosts, mode))


def host_view(facts) -> dict:
    """One host's view for the judge: its survey's check view plus what the judge compares across hosts."""
    from ansible_collections.ncclkit.cluster.plugins.module_utils.host.rdma import rdma_transport
    view = (facts.get("__nccl_preflight_survey") or {}).get("check_view")
    if not view:
        raise AnsibleFilterError("nccl_check_judge: a host has no check view: run nccl_host_survey with check: true "
                                 "on every host first")
    gpus = facts.get("nccl_preflight_gpus") or []
    return dict(view, cluster_ip=facts.get("ncclkit_cluster_ip", ""),
                cluster_ifname=facts.get("ncclkit_cluster_ifname", ""), gpu_count=len(gpus),
                transport=rdma_transport(facts.get("nccl_preflight_rdma_ports") or []),
                nccl_version=(facts.get("ncclkit_nccl") or {}).get("version", ""),
                driver_version=gpus[0].get("driver_version", "") if gpus else "",
                probes=probes_of(facts.get("__nccl_preflight_check_probe") or {}, facts.get("inventory_hostname", "")))


def probes_of(registered: dict, host: str) -> dict:
    """The probe's result: the module's `probes`, or the last JSON line the probe script printed
    (through raw, on a terminal that may add carriage returns and stderr lines); none when the
    probe did not run (a playbook of one's own without it)."""
    from ansible_collections.ncclkit.cluster.plugins.module_utils.common.script_result import last_json_object
    if "probes" in registered or "stdout" not in registered:
        return registered.get("probes") or {}
    value = last_json_object(registered["stdout"])
    if value is not None and isinstance(value.get("probes"), dict):
        return dict(value["probes"])
    raise AnsibleFilterError(f"nccl_check_judge: {host}'s probe printed no result: "
                             f"{str(registered['stdout']).strip()[-300:]!r}")


def nccl_check_judge(hostvars, hosts, master):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.check.findings import judge
    if not hosts:
        raise AnsibleFilterError("nccl_check_judge: no hosts to judge")
    return judge({name: host_view(hostvars[name]) for name in hosts}, dict(master or {}))


class FilterModule:
    def filters(self):
        return {
            "nccl_check_master": nccl_check_master,
            "nccl_check_probe_targets": nccl_check_probe_targets,
            "nccl_check_path_targets": nccl_check_path_targets,
            "nccl_check_judge": nccl_check_judge,
        }
