# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Filters over what a host is: its RDMA ports (module_utils/host/rdma.py), its container, whether it was reached."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

# The module_utils are imported inside the filters, not here: Ansible imports every filter file of
# the collection in each worker that calls any of them (about 0.09 s CPU a worker, docs/benchmarks.md).


def rdma_usable_ports(lines):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.host.rdma import usable_rdma_ports
    return usable_rdma_ports(lines)


def rdma_erdma_devices(lines):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.host.rdma import erdma_devices
    return erdma_devices(lines)


def rdma_transport_of(lines):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.host.rdma import rdma_transport
    return rdma_transport(lines)


def rdma_disagreement_of(ports_by_host):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.host.rdma import rdma_disagreement
    return rdma_disagreement(dict(ports_by_host))


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


# Where a user reads a host's SSH address and port, by the inventory's ncclkit_cloud.
CONSOLE_FIELDS = {
    "autodl": ("the instance's SSH login command in the AutoDL console (Container Instances -> "
               "Login command: ssh -p PORT root@connect.<region>.seetacloud.com): PORT is "
               "ansible_port, the host name is ansible_host; a stopped or restarted instance gets "
               "a new port"),
    "aws": "the instance's private DNS name or IP in the EC2 console, and that it is running",
    "alibaba": "the instance's IP in the ECS console, and that it is running",
}


DEFAULT_FIELD = "the host's SSH address and port in the inventory"


def unreachable_hint(hosts, hostvars):
    """['node2 (connect.westb.seetacloud.com:41022) was not reached: check ...', ...]"""
    lines = []
    for host in sorted(hosts):
        variables = hostvars.get(host) or {}
        address = variables.get("ansible_host") or host
        port = variables.get("ansible_port") or 22
        field = CONSOLE_FIELDS.get(str(variables.get("ncclkit_cloud") or ""), DEFAULT_FIELD)
        lines.append(f"{host} ({address}:{port}) was not reached and is left out: check {field}")
    return lines


class FilterModule:
    def filters(self):
        return {
            "rdma_usable_ports": rdma_usable_ports,
            "rdma_erdma_devices": rdma_erdma_devices,
            "rdma_transport": rdma_transport_of,
            "rdma_disagreement": rdma_disagreement_of,
            "container_port_range": container_port_range,
            "container_firewall": container_firewall,
            "unreachable_hint": unreachable_hint,
        }
