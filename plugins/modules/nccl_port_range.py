#!/usr/bin/python
# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Pin net.ipv4.ip_local_port_range to NCCL's range, now and at every boot, in a file that wins."""

from __future__ import annotations

DOCUMENTATION = r"""
module: nccl_port_range
short_description: Pin the ephemeral port range NCCL listens on, in a sysctl file that wins at boot
description:
  - Writes C(net.ipv4.ip_local_port_range) to O(path), a file named to sort after every other
    sysctl.d file, and sets the live value.
  - Fails before changing anything when a file read after it at boot sets the key to another value
    (a later sysctl.d file, or C(/etc/sysctl.conf), which procps' C(sysctl --system) applies after
    every sysctl.d file), naming the file and the line.
  - Removes a file of O(old_paths) only when ncclkit wrote it (stamped, or holding nothing but this
    key); any other such file is kept, with a warning.
  - O(state=absent) removes the files ncclkit wrote; the live value stays until the next boot.
version_added: 0.1.0
author: ncclkit maintainers (!UNKNOWN)
extends_documentation_fragment:
  - ncclkit.cluster.attributes
options:
  state:
    description: Whether ncclkit's file should be there.
    type: str
    choices: [present, absent]
    default: present
  port_range:
    description: The lowest and highest port. Required with O(state=present).
    type: list
    elements: int
  path:
    description: ncclkit's sysctl file.
    type: path
    default: /etc/sysctl.d/99-zz-ncclkit-nccl.conf
  old_paths:
    description: Where earlier versions of ncclkit put the file.
    type: list
    elements: path
    default: [/etc/sysctl.d/60-ncclkit-nccl.conf]
  set_live:
    description: Set the running kernel's value too (false where /proc/sys is read-only).
    type: bool
    default: true
  root:
    description: The root the sysctl directories are read under (a chroot or an image; tests).
    type: path
    default: /
  variable:
    description: The variable to name in a message about the range.
    type: str
    default: nccl_network_port_range
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
"""

EXAMPLES = r"""
- name: Pin NCCL's port range
  ncclkit.cluster.nccl_port_range:
    port_range: [32768, 60999]
"""

RETURN = r"""
path:
  description: ncclkit's sysctl file.
  returned: always
  type: str
removed:
  description: Files of ncclkit's removed (earlier names, or all of them with O(state=absent)).
  returned: always
  type: list
  elements: str
conflicts:
  description: Settings read after ncclkit's file at boot that set the key to another value.
  returned: on failure
  type: list
  elements: dict
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ncclkit.cluster.plugins.module_utils.host import sysctl as precedence
from ansible_collections.ncclkit.cluster.plugins.module_utils.host.files import write_atomically
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.ports import PortError, parse_port_range

KEY = "net.ipv4.ip_local_port_range"
LIVE = "/proc/sys/net/ipv4/ip_local_port_range"
HEADER = (f"{precedence.STAMP} NCCL's ephemeral port range (ncclkit.cluster.nccl_network). Named to sort after\n"
          "# every other sysctl.d file, so that it wins at boot. Generated: edits are replaced, and state absent\n"
          "# removes it.\n")


def main():
    module = AnsibleModule(
        argument_spec={
            "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
            "port_range": {"type": "list", "elements": "int"},
            "path": {"type": "path", "default": "/etc/sysctl.d/99-zz-ncclkit-nccl.conf"},
            "old_paths": {"type": "list", "elements": "path", "default": ["/etc/sysctl.d/60-ncclkit-nccl.conf"]},
            "set_live": {"type": "bool", "default": True},
            "root": {"type": "path", "default": "/"},
            "variable": {"type": "str", "default": "nccl_network_port_range"},
        },
        required_if=[("state", "present", ("port_range",))],
        supports_check_mode=True,
    )
    params = module.params
    root = params["root"]
    path = _under(root, params["path"])
    result = {"changed": False, "path": params["path"], "removed": []}

    if params["state"] == "present":
        try:
            low, high = parse_port_range(params["port_range"], params["variable"])
        except PortError as error:
            module.fail_json(msg=str(error), **result)
        value = f"{low} {high}"
        conflicts = precedence.later_setters(root, KEY, value, os.path.basename(path))
        if conflicts:
            module.fail_json(msg=precedence.conflict_message(KEY, value, params["path"], conflicts, params["variable"]),
                             conflicts=conflicts, **result)
        content = f"{HEADER}{KEY} = {value}\n"
        if _read(path) != content:
            result["changed"] = True
            if not module.check_mode:
                write_atomically(module, path, content)
        if params["set_live"] and precedence.normal_value(_read(LIVE) or "") != value:
            result["changed"] = True
            if not module.check_mode:
                with open(LIVE, "w") as handle:
                    handle.write(value)
        mine = [old for old in params["old_paths"] if old != params["path"]]
    else:
        mine = params["old_paths"] + [params["path"]]

    for old in mine:
        text = _read(_under(root, old))
        if text is None:
            continue
        if not precedence.is_ours(text, KEY):
            module.warn(f"{old} holds settings other than ncclkit's {KEY}, so ncclkit keeps it; remove its "
                        f"{KEY} line yourself if ncclkit put it there")
            continue
        result["changed"] = True
        result["removed"].append(old)
        if not module.check_mode:
            os.remove(_under(root, old))
    module.exit_json(**result)


def _under(root, path):
    return os.path.join(root, path.lstrip("/"))


def _read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return None


if __name__ == "__main__":
    main()
