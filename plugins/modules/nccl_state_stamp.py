#!/usr/bin/python
# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Compare a host with the state stamp a role recorded when it converged, or record one."""

from __future__ import annotations

DOCUMENTATION = r"""
module: nccl_state_stamp
short_description: Say whether a host is as a role left it, so that a converged host can skip the role's work
description:
  - "With O(state=check), reads the host's state live (the checksums of O(files), the MTU of
    O(interfaces), with O(nft) the hash of the nftables ruleset without counters) and compares it,
    and the digest of O(inputs), with the stamp recorded under O(name). Returns RV(converged) and,
    when converged, the facts the stamp recorded as RV(facts), for the role to set again with
    C(set_fact) (a fact a module returns cannot replace one a C(set_fact) set earlier in the play)."
  - "With O(state=record), records the stamp (the inputs' digest, the live state read now and
    O(facts)). Recording is the role's own bookkeeping, as a cache is, and reports no change."
  - "The stamp is C(<folder>/<name>.json), mode 0600 (O(folder) defaults to C(/var/lib/ncclkit/state),
    made 0700); its facts must hold no secret."
version_added: 0.1.0
author: ncclkit maintainers (!UNKNOWN)
extends_documentation_fragment:
  - ncclkit.cluster.attributes
options:
  name:
    description: The stamp's name (letters, digits, C(_), C(.), C(-)), usually the role's.
    type: str
    required: true
  state:
    description: Compare with the stamp, or record it.
    type: str
    choices: [check, record]
    default: check
  inputs:
    description: What the role's work depends on besides the live state (its settings, the facts it
      reads); only its digest is kept.
    type: raw
    required: true
  files:
    description: Files whose content the stamp covers (a missing one is part of the state too).
    type: list
    elements: path
    default: []
  interfaces:
    description: Interfaces whose MTU the stamp covers.
    type: list
    elements: str
    default: []
  nft:
    description: Cover the nftables ruleset (C(nft -s list ruleset), counters left out).
    type: bool
    default: false
  facts:
    description: With O(state=record), the facts the role set, restored when a later check finds the host converged.
    type: dict
    default: {}
  folder:
    description: Where the stamp is kept (a role may keep it beside what it describes); made 0700 when missing.
    type: path
    default: /var/lib/ncclkit/state
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
"""

EXAMPLES = r"""
- name: Compare the host with its nccl_tests stamp
  ncclkit.cluster.nccl_state_stamp:
    name: nccl_tests
    inputs: "{{ _nccl_tests_stamp_inputs }}"
    files: ["/opt/ncclkit/nccl-tests/current/bin/all_reduce_perf"]
  register: __nccl_tests_stamp_check
"""

RETURN = r"""
converged:
  description: Whether the inputs and the live state match the stamp (always false with O(state=record)).
  returned: always
  type: bool
reason:
  description: Why the host is not converged (empty when it is).
  returned: always
  type: str
path:
  description: The stamp's file.
  returned: always
  type: str
facts:
  description: The facts the stamp recorded.
  returned: when converged
  type: dict
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ncclkit.cluster.plugins.module_utils.host import state_stamp
from ansible_collections.ncclkit.cluster.plugins.module_utils.host.command import run_command
from ansible_collections.ncclkit.cluster.plugins.module_utils.host.files import write_atomically


def main():
    module = AnsibleModule(
        argument_spec={
            "name": {"type": "str", "required": True},
            "state": {"type": "str", "choices": ["check", "record"], "default": "check"},
            "inputs": {"type": "raw", "required": True},
            "files": {"type": "list", "elements": "path", "default": []},
            "interfaces": {"type": "list", "elements": "str", "default": []},
            "nft": {"type": "bool", "default": False},
            "facts": {"type": "dict", "default": {}},
            "folder": {"type": "path", "default": state_stamp.STAMP_DIR},
        },
        supports_check_mode=True,
    )
    params = module.params
    try:
        path = state_stamp.stamp_path(params["name"], params["folder"])
        live = state_stamp.live_state(params["files"], params["interfaces"], params["nft"], run_command)
    except state_stamp.StampError as error:
        module.fail_json(msg=f"nccl_state_stamp: {error}")
    inputs = state_stamp.digest(params["inputs"])
    result = {"changed": False, "path": path, "converged": False, "reason": ""}
    if params["state"] == "record":
        if not module.check_mode:
            os.makedirs(params["folder"], mode=0o700, exist_ok=True)
            write_atomically(module, path, state_stamp.stamp_text(inputs, live, params["facts"]), mode=0o600)
            os.chmod(path, 0o600)  # atomic_move gives a new file the default mode; the folder is 0700 meanwhile
        module.exit_json(**result)
    recorded = state_stamp.read_stamp(path)
    converged, reason = state_stamp.judge(recorded, inputs, live)
    result.update(converged=converged, reason=reason)
    if converged:
        result["facts"] = recorded.get("facts") or {}
    module.exit_json(**result)


if __name__ == "__main__":
    main()
