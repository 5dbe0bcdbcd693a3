"""Filters of cloud_alibaba: every host's cluster NIC, and one MTU for all of them.

The decisions are in plugins/module_utils/network/mtu_plan.py; these only gather facts and turn errors
into a result the role can assert on before any host changes.
"""

from __future__ import annotations

# The module_utils are imported inside the filters, not here: Ansible imports every filter file of
# the collection in each worker that calls any of them (about 0.09 s CPU a worker, docs/benchmarks.md).


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
    jumbo = {"true": True, "false": False}.get(str(jumbo_frames).lower())
    try:
        return {**mtu_plan(wanted, dict(hosts), jumbo), "error": ""}
    except MtuPlanError as error:
        return {"mtu": None, "changes": {}, "error": str(error)}


class FilterModule:
    def filters(self):
        return {"mtu_hosts": mtu_hosts, "cluster_mtu_plan": cluster_mtu_plan}
