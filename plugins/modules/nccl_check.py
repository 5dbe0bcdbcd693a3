#!/usr/bin/python
# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""`ncclkit check`'s host side: will multi-node training start here? Reads only."""

from __future__ import annotations

DOCUMENTATION = r"""
module: nccl_check
short_description: Predict whether multi-node torch/NCCL training starts on the cluster, reading only
description:
  - Two steps, each one task. V(gather) on every host reads what the rendezvous depends on
    (what the host name resolves to, the socket interface variables of every start path the
    nccl_profile role writes, the profile's MASTER_ADDR, /dev/shm, C(ulimit -l), the kernel log's
    Xid and ECC lines, nvidia_peermem, C(nvidia-smi topo -m), torch's version).
  - V(probe) on every host pings the address each peer's host name resolves to (its ring neighbours and the first host, see O(peers)) and opens a TCP
    connection to the rendezvous (MASTER_ADDR:port), with short timeouts.
  - The filter P(ncclkit.cluster.nccl_check_judge#filter) then turns every host's view into
    findings, once, on the controller.
  - For playbooks of one's own that run the check's steps as tasks. C(nccl_preflight) (and so
    C(ncclkit check)) reads the same view in its one M(ncclkit.cluster.nccl_host_survey) run
    (C(check=true), returned as C(check_view)) and runs the same probe code (the collection's
    C(raw_scripts.check_probe) module_utils, standard library only) as a script through C(raw),
    which spares every host a second module start.
  - Changes nothing on the hosts.
version_added: 0.2.0
author: ncclkit maintainers (!UNKNOWN)
extends_documentation_fragment:
  - ncclkit.cluster.attributes
options:
  step:
    description: Which step to run.
    type: str
    choices: [gather, probe]
    required: true
  hostname:
    description: V(gather) - the host name to resolve; empty takes the host's own (gethostname).
    type: str
    default: ""
  python:
    description: V(gather) - the training Python, asked for torch's version (empty skips it).
    type: str
    default: ""
  gpu_count:
    description: V(gather) - the host's GPUs (0 skips C(nvidia-smi topo -m)).
    type: int
    default: 0
  source:
    description: V(probe) - this host's cluster address (the TCP probe binds to it).
    type: str
    default: ""
  targets:
    description: V(probe) - peer name to the addresses its host name resolves to (the first is probed; empty when it does not resolve).
    type: dict
    default: {}
  me:
    description: V(probe) - this host's name among O(targets) (never probed), so that every host can be given one map.
    type: str
    default: ""
  peers:
    description:
      - V(probe) - which of O(targets) to probe, in the map's order.
      - V(ring) probes the two ring neighbours of O(me) and the first host (a constant number of probes per host, linear in the
        cluster, as the reachability check of nccl_network samples), V(full) every other host (quadratic).
    type: str
    choices: [ring, full]
    default: ring
  master:
    description: V(probe) - the rendezvous, C(addr), C(port) and C(source).
    type: dict
    default: {}
  timeout:
    description: Seconds a ping or a TCP connection waits.
    type: float
    default: 1.0
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
"""

EXAMPLES = r"""
- name: Read what the rendezvous depends on
  ncclkit.cluster.nccl_check:
    step: gather
    python: /usr/bin/python3
  register: __check_view
"""

RETURN = r"""
view:
  description: V(gather) - what the host shows (resolved, start_paths, profile_master, shm_bytes, memlock_kib, kernel_log,
    nvidia_peermem, torch_version, topology).
  returned: step is gather
  type: dict
probes:
  description: V(probe) - C(hostname) (peer -> true/false/null, ping of its host name's address) and
    C(master) (the TCP connection's outcome - open, refused, timeout, unreachable or error - null on the master itself).
  returned: step is probe
  type: dict
"""

import socket

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ncclkit.cluster.plugins.module_utils.check.host import gather
from ansible_collections.ncclkit.cluster.plugins.module_utils.raw_scripts.check_probe import probe
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.reachability.plan import probe_peers


def main():
    module = AnsibleModule(
        argument_spec={
            "step": {"type": "str", "choices": ["gather", "probe"], "required": True},
            "hostname": {"type": "str", "default": ""},
            "python": {"type": "str", "default": ""},
            "gpu_count": {"type": "int", "default": 0},
            "source": {"type": "str", "default": ""},
            "targets": {"type": "dict", "default": {}},
            "me": {"type": "str", "default": ""},
            "peers": {"type": "str", "choices": ["ring", "full"], "default": "ring"},
            "master": {"type": "dict", "default": {}},
            "timeout": {"type": "float", "default": 1.0},
        },
        supports_check_mode=True,
    )
    params = module.params
    if params["step"] == "gather":
        view = gather(params["hostname"] or socket.gethostname(), params["python"], params["gpu_count"] > 0)
        module.exit_json(changed=False, view=view)
    targets = params["targets"]
    if params["me"] in targets:
        wanted = probe_peers(list(targets), params["me"], params["peers"])
    else:
        wanted = [name for name in targets if name != params["me"]] if params["peers"] == "full" else list(targets)
    targets = {name: targets[name] for name in wanted}
    module.exit_json(changed=False, probes=probe(params["source"], targets, params["master"],
                                                 params["timeout"]))


if __name__ == "__main__":
    main()
