"""The ncclkit.cluster.nccl_check_judge filter: `ncclkit check`'s findings from every host's view."""

from __future__ import annotations

DOCUMENTATION = r"""
name: nccl_check_judge
short_description: Judge whether multi-node training starts, from every host's view and probes
version_added: 0.3.0
author: ncclkit maintainers
description:
  - Builds every host's view from its facts - what M(ncclkit.cluster.nccl_host_survey) read with
    O(ncclkit.cluster.nccl_host_survey#module:check) (C(__nccl_preflight_survey.check_view)), the
    cluster NIC, GPU count, fabric, NCCL and driver versions, and the M(ncclkit.cluster.nccl_check)
    V(probe) results (C(__nccl_preflight_check_probe)) - and turns the views into findings (code,
    severity, host, cause, fix, evidence; docs/check.md lists the codes) and one verdict line per host.
  - Runs on the controller, once for the whole cluster.
positional: hosts, master
options:
  _input:
    description: C(hostvars).
    type: dict
    required: true
  hosts:
    description: The hosts to judge, in play order (C(ansible_play_hosts)).
    type: list
    elements: str
    required: true
  master:
    description: The rendezvous the probes tried, C(addr), C(port) and C(source).
    type: dict
    required: true
"""

EXAMPLES = r"""
ncclkit_check: "{{ hostvars | ncclkit.cluster.nccl_check_judge(ansible_play_hosts, master) }}"
# => {"ready": false, "verdicts": {"node1": "node1: NOT READY: ..."}, "findings": [...], "master": {...}}
"""

RETURN = r"""
_value:
  description: C(ready), C(verdicts) (host -> line), C(findings) (most severe first) and C(master).
  type: dict
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.ncclkit.cluster.plugins.module_utils.check_findings import judge
from ansible_collections.ncclkit.cluster.plugins.module_utils.rdma_devices import rdma_transport


def host_view(facts) -> dict:
    """One host's view for the judge: its survey's check view plus what the judge compares across hosts."""
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
                probes=(facts.get("__nccl_preflight_check_probe") or {}).get("probes") or {})


def nccl_check_judge(hostvars, hosts, master):
    if not hosts:
        raise AnsibleFilterError("nccl_check_judge: no hosts to judge")
    return judge({name: host_view(hostvars[name]) for name in hosts}, dict(master or {}))


class FilterModule:
    def filters(self):
        return {"nccl_check_judge": nccl_check_judge}
