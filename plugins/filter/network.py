# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Filters over module_utils/network: the cluster NIC, the MTU plan, reachability, firewall sources."""

from __future__ import annotations

import fnmatch

from ansible.errors import AnsibleFilterError

# The module_utils are imported inside the filters, not here: Ansible imports every filter file of
# the collection in each worker that calls any of them (about 0.09 s CPU a worker, docs/benchmarks.md).


def cluster_nic(nics_by_host, host, ifname="", cluster_cidr=""):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.network.cluster_nic import (
        ClusterNicError,
        choose_cluster_nic,
        setting_text,
    )
    if not isinstance(nics_by_host, dict) or host not in nics_by_host:
        raise AnsibleFilterError(f"host {host} is not among the hosts whose NICs were read; "
                                 "run nccl_preflight on every host of the play first")
    try:
        ifname = setting_text("nccl_preflight_ifname", ifname)
        cluster_cidr = setting_text("nccl_preflight_cluster_cidr", cluster_cidr)
        return choose_cluster_nic(host, nics_by_host, ifname=ifname or None, cluster_cidr=cluster_cidr or None)
    except ClusterNicError as error:
        raise AnsibleFilterError(str(error)) from None


SETTINGS = ("nccl_preflight_ifname", "nccl_preflight_cluster_cidr")


def _setting(facts, name, default):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.network.cluster_nic import ClusterNicError, setting_text
    try:
        return setting_text(name, facts.get(name, default))
    except ClusterNicError as error:
        raise AnsibleFilterError(str(error)) from None


def cluster_nics(hostvars, hosts, ifname="", cluster_cidr=""):
    """{host: {ifname, address, prefix, network, summary}} or {host: {error}} for each of `hosts`.

    A host's own nccl_preflight_ifname / _cluster_cidr (inventory, host_vars, -e) wins over the
    play's (`ifname`, `cluster_cidr`: what the role sees where this runs).
    """
    from ansible_collections.ncclkit.cluster.plugins.module_utils.network.cluster_nic import (
        ClusterNicError,
        Membership,
        choose_cluster_nic,
    )
    from ansible_collections.ncclkit.cluster.plugins.module_utils.host.summary import host_summary
    facts = {host: hostvars[host] for host in hosts}
    missing = [host for host in hosts if "nccl_preflight_nics" not in facts[host]]
    if missing:
        raise AnsibleFilterError(f"cluster_nics: no NICs read on {', '.join(missing)}: "
                                 "run nccl_preflight's survey on every host of the play first")
    nics_by_host = {host: facts[host]["nccl_preflight_nics"] for host in hosts}
    membership = Membership(nics_by_host)
    chosen = {}
    for host in hosts:
        own = facts[host]
        try:
            nic = choose_cluster_nic(host, nics_by_host, ifname=_setting(own, SETTINGS[0], ifname) or None,
                                     cluster_cidr=_setting(own, SETTINGS[1], cluster_cidr) or None,
                                     membership=membership)
        except ClusterNicError as error:
            chosen[host] = {"error": str(error)}
            continue
        summary = host_summary(host, nic, own.get("nccl_preflight_gpus") or [],
                               own.get("nccl_preflight_gpu_absent_reason", ""), nics_by_host[host],
                               own.get("ncclkit_cuda"), own.get("ncclkit_nccl"), own.get("ncclkit_mpi"))
        chosen[host] = dict(nic, summary=summary)
    return chosen


def mtu_hosts(hostvars, hosts):
    """{host: {ifname, mtu, max_mtu, erdma}} from nccl_preflight's facts (NICs, RDMA ports)."""
    from ansible_collections.ncclkit.cluster.plugins.module_utils.host.rdma import erdma_devices
    found = {}
    for name in hosts:
        facts = hostvars[name]
        ifname = facts.get("ncclkit_cluster_ifname")
        own = next((nic for nic in facts.get("nccl_preflight_nics") or [] if nic.get("name") == ifname), {})
        erdma = bool(erdma_devices(facts.get("nccl_preflight_rdma_ports") or []))
        found[name] = {"ifname": ifname, "mtu": own.get("mtu"), "max_mtu": own.get("max_mtu") or 0,
                       "erdma": erdma}
    return found


def cluster_mtu_plan(wanted, hosts, jumbo_frames="auto"):
    """{"mtu", "changes", "error"}: error is "" when every host can take the MTU."""
    from ansible_collections.ncclkit.cluster.plugins.module_utils.network.mtu_plan import MtuPlanError, mtu_plan
    from ansible_collections.ncclkit.cluster.plugins.module_utils.common.tristate import AUTO, ON, TristateError, tristate
    try:
        word = tristate(jumbo_frames, "cloud_alibaba_jumbo_frames")
        return {**mtu_plan(wanted, dict(hosts), None if word == AUTO else word == ON), "error": ""}
    except (MtuPlanError, TristateError) as error:
        return {"mtu": None, "changes": {}, "error": str(error)}


def reachability_hosts(hostvars, hosts):
    """Each host's cluster address, NIC, MTU and other addresses, from nccl_preflight's facts."""
    from ansible_collections.ncclkit.cluster.plugins.module_utils.network.cluster_nic import VIRTUAL_PATTERNS
    found = []
    for name in hosts:
        facts = hostvars[name]
        ifname = facts.get("ncclkit_cluster_ifname")
        nics = facts.get("nccl_preflight_nics") or []
        own = next((nic for nic in nics if nic.get("name") == ifname), {})
        alternates = [
            {"address": addr["address"], "ifname": nic["name"]}
            for nic in nics
            if nic.get("name") != ifname and not nic.get("loopback")
            and not any(fnmatch.fnmatch(nic.get("name", ""), pattern) for pattern in VIRTUAL_PATTERNS)
            for addr in nic.get("ipv4", [])
        ]
        found.append({"name": name, "address": facts.get("ncclkit_cluster_ip"), "ifname": ifname,
                      # A cloud role that changed the MTU after nccl_preflight says so in ncclkit_cluster_mtu.
                      "mtu": facts.get("ncclkit_cluster_mtu") or own.get("mtu"), "alternates": alternates})
    return found


def reachability_ports(port_range, rendezvous_ports, between=3):
    """{listen_ports, iperf3_port} for a port range and the rendezvous ports."""
    from ansible_collections.ncclkit.cluster.plugins.module_utils.network.ports import check_port, parse_port_range
    from ansible_collections.ncclkit.cluster.plugins.module_utils.network.reachability.plan import plan_ports
    low, high = parse_port_range(port_range)
    ports = [check_port(port, "nccl_network_master_port / nccl_network_extra_ports") for port in rendezvous_ports]
    return plan_ports(low, high, ports, int(between))


def reachability_report(hostvars, hosts, host_info, rendezvous_ports=(), min_bandwidth_gbps=0.0,
                        all_hosts=(), result_var="__nccl_network_reachability", link_median_fraction=0.5,
                        link_speed_fraction=0.1):
    """Every host's registered nccl_reachability result -> {matrix, verdicts, passed, summary,
    link_bandwidth}; hosts of `all_hosts` not in `hosts` failed before the check."""
    from ansible_collections.ncclkit.cluster.plugins.module_utils.network.reachability.verdicts import build_report
    results = {}
    for name in hosts:
        registered = hostvars[name].get(result_var) or {}
        results[name] = registered.get("reachability")
    return build_report(list(host_info), results, [int(port) for port in rendezvous_ports],
                        float(min_bandwidth_gbps or 0), [name for name in all_hosts if name not in hosts],
                        float(link_median_fraction), float(link_speed_fraction))


def firewall_source_problems(sources, allow_wide=False):
    """One message per source the firewall must not admit (host bits, IPv6, wider than /8)."""
    from ansible_collections.ncclkit.cluster.plugins.module_utils.network.firewall import sources as firewall_sources
    return firewall_sources.problems(sources, bool(allow_wide))


def hosts_left_out(all_hosts, hostvars, play_hosts):
    """Sorted names of `all_hosts` that failed earlier (not in `play_hosts`) or have no cluster address."""
    from ansible_collections.ncclkit.cluster.plugins.module_utils.network.left_out import hosts_left_out as left_out
    addressed = [host for host in all_hosts if "ncclkit_cluster_ip" in hostvars[host]]
    return left_out(list(all_hosts), list(play_hosts), addressed)


class FilterModule:
    def filters(self):
        return {
            "cluster_nic": cluster_nic,
            "cluster_nics": cluster_nics,
            "mtu_hosts": mtu_hosts,
            "cluster_mtu_plan": cluster_mtu_plan,
            "reachability_hosts": reachability_hosts,
            "reachability_ports": reachability_ports,
            "reachability_report": reachability_report,
            "firewall_source_problems": firewall_source_problems,
            "hosts_left_out": hosts_left_out,
        }
