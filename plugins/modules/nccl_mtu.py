#!/usr/bin/python
# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Set a NIC's MTU now and keep it across reboots in what configures the host's network."""

from __future__ import annotations

DOCUMENTATION = r"""
module: nccl_mtu
short_description: Set the cluster NIC's MTU now and persist it
description:
  - Sets O(ifname)'s MTU with C(ip link) and writes it where the host's network configuration
    keeps it - netplan (its own C(/etc/netplan/99-ncclkit-mtu.yaml), which sorts after
    cloud-init's C(50-cloud-init.yaml) and overrides only the MTU), a systemd-networkd drop-in
    beside the C(.network) file that matches the NIC, C(MTU=) in an ifcfg file, C(mtu) in
    Debian's ifupdown stanza, or NetworkManager's connection of the NIC (nmcli).
  - Nothing else in those files changes; a second run with the same MTU changes nothing.
  - Check mode reports what would change, with a diff of the files.
version_added: 0.2.0
author: ncclkit maintainers (!UNKNOWN)
extends_documentation_fragment:
  - ncclkit.cluster.attributes
options:
  ifname:
    description: The NIC (kernel name rules - at most 15 characters, no slash, colon or space).
    type: str
    required: true
  mtu:
    description: The MTU to set (576-65535).
    type: int
    required: true
  root:
    description: Where the host's C(/etc) lives (tests point it at a fake tree); C(/) sets the MTU now too.
    type: path
    default: /
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
"""

EXAMPLES = r"""
- name: Give the cluster NIC jumbo frames
  ncclkit.cluster.nccl_mtu:
    ifname: "{{ ncclkit_cluster_ifname }}"
    mtu: 8500
"""

RETURN = r"""
ansible_facts:
  description: C(ncclkit_cluster_mtu), the NIC's MTU after the module (nccl_network's check uses it).
  returned: when O(root) is C(/)
  type: dict
manager:
  description: What keeps the MTU across reboots (netplan, systemd-networkd, ifcfg, ifupdown, NetworkManager), or none.
  returned: success
  type: str
previous_mtu:
  description: The MTU before.
  returned: success
  type: int
files:
  description: The files written (or that would be, in check mode).
  returned: success
  type: list
  elements: str
"""

import os
import re
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ncclkit.cluster.plugins.module_utils.host.command import TIMED_OUT, run_command
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.mtu_persist import plan_persist

IFNAME = re.compile(r"^[A-Za-z0-9_.@-]{1,15}$")
# nmcli waits on NetworkManager over D-Bus; a hung daemon would hold the play without a limit.
COMMAND_TIMEOUT_S = 30


def host_command(module, argv, must_succeed=False, timeout=COMMAND_TIMEOUT_S):
    """(rc, stdout): `argv` run with a time limit; a command past it fails the module, naming it.
    With `must_succeed`, a non-zero exit fails the module with the command's own error."""
    rc, out, err = run_command(argv, timeout)
    if rc == TIMED_OUT:
        hint = "; is NetworkManager hung? (`systemctl status NetworkManager`)" if "nmcli" in argv[0] else ""
        module.fail_json(msg=f"{err}{hint}", rc=rc)
    if must_succeed and rc != 0:
        module.fail_json(msg=f"`{' '.join(argv)}` failed ({rc}): {err.strip() or out.strip()}", rc=rc)
    return rc, out


def current_mtu(ifname):
    try:
        with open(f"/sys/class/net/{ifname}/mtu") as stream:
            return int(stream.read().strip())
    except (OSError, ValueError):
        return None


def main():
    module = AnsibleModule(
        argument_spec={
            "ifname": {"type": "str", "required": True},
            "mtu": {"type": "int", "required": True},
            "root": {"type": "path", "default": "/"},
        },
        supports_check_mode=True,
    )
    ifname, mtu, root = module.params["ifname"], module.params["mtu"], module.params["root"]
    if not IFNAME.match(ifname) or ifname in (".", ".."):
        module.fail_json(msg=f"ifname {ifname!r} is not an interface name (at most 15 letters, digits, . _ - @)")
    if not 576 <= mtu <= 65535:
        module.fail_json(msg=f"mtu {mtu} is outside 576-65535")
    live = root == "/"
    previous = current_mtu(ifname) if live else None
    if live and previous is None:
        module.fail_json(msg=f"{ifname} does not exist on this host (no /sys/class/net/{ifname})")
    nmcli = shutil.which("nmcli") if live else None
    plan = plan_persist(root, ifname, mtu, nmcli=bool(nmcli))
    edits = {}
    for path, text in plan["files"].items():
        try:
            with open(path, encoding="utf-8") as stream:
                old = stream.read()
        except OSError:
            old = ""
        if old != text:
            edits[path] = (old, text)
    connection = None
    if plan["manager"] == "NetworkManager":
        rc, out = host_command(module, [nmcli, "-g", "GENERAL.CONNECTION", "device", "show", ifname])
        connection = out.strip() if rc == 0 else ""
        rc, out = host_command(module, [nmcli, "-g", "802-3-ethernet.mtu", "connection", "show", connection]) \
            if connection else (1, "")
        nm_changed = bool(connection) and out.strip() != str(mtu)
    else:
        nm_changed = False
    changed = bool(edits) or nm_changed or (live and previous != mtu)
    diff = [{"before_header": path, "after_header": path, "before": old, "after": new}
            for path, (old, new) in edits.items()]
    result = {"changed": changed, "manager": plan["manager"], "previous_mtu": previous,
              "files": sorted(edits), "diff": diff}
    if module.check_mode or not changed:
        module.exit_json(**result, ansible_facts={"ncclkit_cluster_mtu": previous} if live else {})
    for path, (dummy, text) in edits.items():
        os.makedirs(os.path.dirname(path), exist_ok=True)
        handle, staged = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".ncclkit-")
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.chmod(staged, 0o600 if "/netplan/" in path else 0o644)   # netplan warns on readable files
        module.atomic_move(staged, path)
    if nm_changed:
        host_command(module, [nmcli, "connection", "modify", connection, "802-3-ethernet.mtu", str(mtu)],
                     must_succeed=True)
    if live and previous != mtu:
        ip = module.get_bin_path("ip", required=True)
        host_command(module, [ip, "link", "set", "dev", ifname, "mtu", str(mtu)], must_succeed=True)
    module.exit_json(**result, ansible_facts={"ncclkit_cluster_mtu": mtu} if live else {})


if __name__ == "__main__":
    main()
