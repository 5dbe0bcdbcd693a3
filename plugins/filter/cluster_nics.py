"""The ncclkit.cluster.cluster_nics filter: every host's cluster NIC and summary line, decided once.

Documented in cluster_nics.yml beside this file (ansible-doc -t filter ncclkit.cluster.cluster_nics).
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
# The module_utils are imported inside the filters, not here: Ansible imports every filter file of
# the collection in each worker that calls any of them (about 0.09 s CPU a worker, docs/benchmarks.md).

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


class FilterModule:
    def filters(self):
        return {"cluster_nics": cluster_nics}
