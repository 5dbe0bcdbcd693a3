"""The ncclkit.cluster.cluster_nic filter: choose a host's cluster NIC from every host's NICs.

Documented in cluster_nic.yml beside this file (ansible-doc -t filter ncclkit.cluster.cluster_nic).
"""

from __future__ import annotations

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


class FilterModule:
    def filters(self):
        return {"cluster_nic": cluster_nic}
