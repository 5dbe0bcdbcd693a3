"""The ncclkit.cluster.cluster_nic filter: choose a host's cluster NIC from every host's NICs."""

from __future__ import annotations

DOCUMENTATION = r"""
name: cluster_nic
short_description: Choose the NIC that carries a host's cluster network
version_added: 0.3.0
author: ncclkit maintainers
description:
  - The cluster NIC of a host is the interface whose IPv4 network holds the addresses of all the
    other hosts, or the one with an address in O(cluster_cidr), or the one named by O(ifname).
  - Loopback and virtual interfaces (docker*, veth*, virbr*, br-*, cni*, ...) are never chosen
    unless named.
  - Fails, listing every host's interfaces and the variable that settles it, when no NIC or more
    than one qualifies.
  - Runs on the controller, so the choice costs no module run on the hosts.
positional: host
options:
  _input:
    description: Each host's NICs, as the C(nccl_preflight_nics) fact holds them.
    type: dict
    required: true
  host:
    description: The inventory name of the host to choose for, a key of the input.
    type: str
    required: true
  ifname:
    description: Use this interface (the user's choice); empty to choose.
    type: str
    default: ""
  cluster_cidr:
    description: The cluster network; the NIC with an address in it is chosen. Empty to choose.
    type: str
    default: ""
"""

EXAMPLES = r"""
cluster_nic: >-
  {{ dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars, 'nccl_preflight_nics')))
     | ncclkit.cluster.cluster_nic(inventory_hostname) }}
# => {"ifname": "eth1", "address": "10.0.0.11", "prefix": 24, "network": "10.0.0.0/24"}
"""

RETURN = r"""
_value:
  description: The chosen interface C(ifname), its IPv4 C(address) and C(prefix), and the C(network) in CIDR form.
  type: dict
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.ncclkit.cluster.plugins.module_utils.cluster_nic import ClusterNicError, choose_cluster_nic


def cluster_nic(nics_by_host, host, ifname="", cluster_cidr=""):
    if not isinstance(nics_by_host, dict) or host not in nics_by_host:
        raise AnsibleFilterError(f"host {host} is not among the hosts whose NICs were read; "
                                 "run nccl_preflight on every host of the play first")
    try:
        return choose_cluster_nic(host, nics_by_host, ifname=ifname or None, cluster_cidr=cluster_cidr or None)
    except ClusterNicError as error:
        raise AnsibleFilterError(str(error)) from None


class FilterModule:
    def filters(self):
        return {"cluster_nic": cluster_nic}
