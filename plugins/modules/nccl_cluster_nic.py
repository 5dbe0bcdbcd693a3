#!/usr/bin/python
# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Choose the cluster NIC of a host from every host's NICs."""

from __future__ import annotations

DOCUMENTATION = r"""
module: nccl_cluster_nic
short_description: Choose the NIC that carries the cluster network
description:
  - The cluster NIC of a host is the interface whose IPv4 network holds the addresses of all the
    other hosts, or the one with an address in O(cluster_cidr), or the one named by O(ifname).
  - Loopback and virtual interfaces (docker*, veth*, virbr*, br-*, cni*, ...) are never chosen
    unless named.
  - Fails, listing every host's interfaces and the variable that settles it, when no NIC or more
    than one qualifies.
  - Only computes; it changes nothing on the host.
version_added: 0.1.0
author: ncclkit maintainers (!UNKNOWN)
options:
  host:
    description: The inventory name of this host, a key of O(nics_by_host).
    type: str
    required: true
  nics_by_host:
    description: Each host's NICs, as the C(nccl_preflight_nics) fact holds them.
    type: dict
    required: true
  ifname:
    description: Use this interface (the user's choice).
    type: str
  cluster_cidr:
    description: The cluster network; the NIC with an address in it is chosen.
    type: str
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
"""

EXAMPLES = r"""
- name: Choose the cluster NIC
  ncclkit.cluster.nccl_cluster_nic:
    host: "{{ inventory_hostname }}"
    nics_by_host: "{{ dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars, 'nccl_preflight_nics'))) }}"
"""

RETURN = r"""
ansible_facts:
  description: The chosen NIC.
  returned: success
  type: dict
  contains:
    ncclkit_cluster_ifname:
      description: Interface name.
      type: str
      sample: eth1
    ncclkit_cluster_ip:
      description: The interface's IPv4 address on the cluster network.
      type: str
      sample: 10.0.0.11
    ncclkit_cluster_network:
      description: The cluster network in CIDR form.
      type: str
      sample: 10.0.0.0/24
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ncclkit.cluster.plugins.module_utils.cluster_nic import (
    ClusterNicError,
    choose_cluster_nic,
)


def main():
    module = AnsibleModule(
        argument_spec={
            "host": {"type": "str", "required": True},
            "nics_by_host": {"type": "dict", "required": True},
            "ifname": {"type": "str"},
            "cluster_cidr": {"type": "str"},
        },
        supports_check_mode=True,
    )
    params = module.params
    if params["host"] not in params["nics_by_host"]:
        module.fail_json(msg=f"host {params['host']} is not among nics_by_host; "
                             "run nccl_preflight on every host of the play first")
    try:
        chosen = choose_cluster_nic(params["host"], params["nics_by_host"],
                                    ifname=params["ifname"], cluster_cidr=params["cluster_cidr"])
    except ClusterNicError as error:
        module.fail_json(msg=str(error))
    module.exit_json(changed=False, ansible_facts={
        "ncclkit_cluster_ifname": chosen["ifname"],
        "ncclkit_cluster_ip": chosen["address"],
        "ncclkit_cluster_network": chosen["network"],
    })


if __name__ == "__main__":
    main()
