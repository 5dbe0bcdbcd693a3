"""Filters that adapt a role's settings to the host's container (fact ncclkit_container).

The decisions live here, in Python, so that nccl_network's YAML only wires them.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


def container_port_range(wanted, container):
    """The port range NCCL will use: `wanted` where /proc/sys can be written (nccl_network pins
    it), else the host's current ip_local_port_range, which nothing here can change."""
    container = container or {}
    if container.get("proc_sys_writable", True):
        return [int(port) for port in wanted]
    current = container.get("ip_local_port_range") or []
    if len(current) != 2:
        raise AnsibleFilterError(
            "/proc/sys is read-only and net.ipv4.ip_local_port_range is unreadable, so the ports "
            "NCCL listens on are unknown: check /proc/sys/net/ipv4/ip_local_port_range on the host")
    return [int(port) for port in current]


def container_firewall(wanted, container, state="present"):
    """The firewall backend to use: `none` where the container has no CAP_NET_ADMIN (no host
    firewall can exist there), else `wanted`. An explicit backend other than none cannot work
    there, and says so, rather than failing half-way in the module."""
    container = container or {}
    if state != "present" or container.get("firewall_possible", True):
        return wanted
    if wanted not in ("auto", "none"):
        raise AnsibleFilterError(
            f"nccl_network_firewall is {wanted}, but this host has no CAP_NET_ADMIN (a container): "
            "no host firewall can be configured. Set nccl_network_firewall to auto or none, and "
            "open the ports in the provider's security group instead")
    return "none"


class FilterModule:
    def filters(self):
        return {
            "container_port_range": container_port_range,
            "container_firewall": container_firewall,
        }
