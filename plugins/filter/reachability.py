"""Filters that feed the nccl_reachability module and judge what every host found."""

from __future__ import annotations

import fnmatch

# The module_utils are imported inside the filters, not here: Ansible imports every filter file of
# the collection in each worker that calls any of them (about 0.09 s CPU a worker, docs/benchmarks.md).


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


class FilterModule:
    def filters(self):
        return {
            "reachability_hosts": reachability_hosts,
            "reachability_ports": reachability_ports,
            "reachability_report": reachability_report,
        }
