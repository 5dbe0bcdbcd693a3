"""The ncclkit.cluster.nccl_check_judge filter: `ncclkit check`'s findings from every host's view."""

from __future__ import annotations

DOCUMENTATION = r"""
name: nccl_check_judge
short_description: Judge whether multi-node training starts, from every host's view and probes
version_added: 0.3.0
author: ncclkit maintainers
description:
  - Turns every host's view (what M(ncclkit.cluster.nccl_check) V(gather) read, plus the cluster
    NIC, GPU count, transport, NCCL and driver versions and the V(probe) results) into findings
    (code, severity, host, cause, fix, evidence; docs/check.md lists the codes) and one verdict
    line per host.
  - Runs on the controller, once for the whole cluster.
positional: master
options:
  _input:
    description: Every host, in play order, to its view.
    type: dict
    required: true
  master:
    description: The rendezvous the probes tried, C(addr), C(port) and C(source).
    type: dict
    required: true
"""

EXAMPLES = r"""
ncclkit_check: "{{ views_by_host | ncclkit.cluster.nccl_check_judge(master) }}"
# => {"ready": false, "verdicts": {"node1": "node1: NOT READY: ..."}, "findings": [...], "master": {...}}
"""

RETURN = r"""
_value:
  description: C(ready), C(verdicts) (host -> line), C(findings) (most severe first) and C(master).
  type: dict
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.ncclkit.cluster.plugins.module_utils.check_findings import judge


def nccl_check_judge(hosts, master):
    if not isinstance(hosts, dict) or not hosts:
        raise AnsibleFilterError("nccl_check_judge: no host views: run the gather and probe steps on every host first")
    return judge(dict(hosts), dict(master or {}))


class FilterModule:
    def filters(self):
        return {"nccl_check_judge": nccl_check_judge}
