#!/usr/bin/python
# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Admit NCCL's ports from the cluster hosts on the cluster NIC, in whatever firewall the host uses."""

from __future__ import annotations

DOCUMENTATION = r"""
module: nccl_firewall
short_description: Admit NCCL's TCP ports from the cluster hosts, on the cluster NIC only
description:
  - Adds rules that accept TCP to the NCCL port range and the rendezvous ports, and ICMP echo,
    from the cluster hosts' addresses (or given networks), on the cluster NIC only. With
    O(drop_others), new connections to those ports from any other address on that NIC are dropped,
    so the range is closed even on a host where nothing else filters. SSH and all other ports are
    left alone.
  - "Backends: C(nftables) (a table C(inet ncclkit) of its own; never flushes other tables),
    C(iptables) (a chain C(NCCLKIT) and one jump from C(INPUT)), C(ufw) (rules commented
    C(ncclkit)), C(firewalld) (rich rules in the NIC's zone, runtime and permanent), C(none);
    C(auto) picks the firewall active on the host, or nftables where none is."
  - An accept in one nftables table does not override a drop in another table's chain on the same
    hook. When a chain outside the backend's reach drops by default (a policy drop or a final
    drop-all rule), the module fails before changing anything and says which chain and what settles
    it (O(nftables_chains) for nftables chains).
  - O(state=absent) removes exactly what ncclkit added, on every backend.
  - Writes its rules under O(state_dir) (C(firewall.nft) or C(firewall.iptables), C(firewall.sh)
    that loads them, C(firewall.json) recording the firewalld rules it added), so a boot service can restore them.
version_added: 0.1.0
author: ncclkit maintainers (!UNKNOWN)
extends_documentation_fragment:
  - ncclkit.cluster.attributes
options:
  state:
    description: Whether ncclkit's rules should be there.
    type: str
    choices: [present, absent]
    default: present
  backend:
    description: The firewall to add the rules to.
    type: str
    choices: [auto, nftables, iptables, ufw, firewalld, none]
    default: auto
  ifname:
    description:
      - The cluster NIC. Required with O(state=present).
      - An interface name as the kernel allows it (1-15 characters), of letters, digits, C(_ . @ -).
    type: str
  sources:
    description:
      - IPv4 addresses or networks (CIDR) to admit. Required with O(state=present).
      - A network with host bits set (V(10.0.0.0/0), V(10.1.2.3/8)) is refused, so is IPv6 (the rules
        admit IPv4 peers only), and so is a prefix shorter than /8 unless O(allow_wide_sources).
    type: list
    elements: str
  allow_wide_sources:
    description: Admit sources with a prefix shorter than /8 (V(0.0.0.0/0) admits everyone).
    type: bool
    default: false
  port_range:
    description: The lowest and highest port of the range NCCL listens on.
    type: list
    elements: int
    default: [32768, 60999]
  ports:
    description: Further ports to admit (the rendezvous ports).
    type: list
    elements: int
    default: []
  icmp:
    description: Admit ICMP echo requests from the sources (ufw admits them by default anyway).
    type: bool
    default: true
  drop_others:
    description: Drop new connections to the admitted ports from other addresses on the NIC.
    type: bool
    default: true
  nftables_chains:
    description:
      - Existing nftables chains (C(FAMILY TABLE CHAIN)) that drop by default and should admit the
        cluster; ncclkit adds a chain C(ncclkit) with its accepts to each one's table, and a jump to
        it at the chain's top.
      - FAMILY is V(ip) or V(inet); TABLE and CHAIN are a letter or C(_), then letters, digits, C(_ . -).
    type: list
    elements: str
    default: []
  firewalld_zone:
    description:
      - The firewalld zone for the rich rules; empty for the zone of O(ifname).
      - 1-17 letters, digits, C(_ + -).
    type: str
    default: ""
  state_dir:
    description: Where ncclkit keeps its rule files and its record of what it added (an absolute path).
    type: path
    default: /etc/ncclkit
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
"""

EXAMPLES = r"""
- name: Admit the NCCL ports from the cluster hosts on eth1
  ncclkit.cluster.nccl_firewall:
    ifname: eth1
    sources: [10.0.0.11, 10.0.0.12]
    port_range: [32768, 60999]
    ports: [29500]

- name: Remove what ncclkit added
  ncclkit.cluster.nccl_firewall:
    state: absent
"""

RETURN = r"""
backend:
  description: The backend the rules are in (C(none) after O(state=absent)).
  returned: always
  type: str
  sample: nftables
actions:
  description: What was done (or, in check mode, would be).
  returned: always
  type: list
  elements: str
rules:
  description: ncclkit's rules as they are now.
  returned: always
  type: list
  elements: str
"""

import json
import os
import shutil

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.firewall import backends
from ansible_collections.ncclkit.cluster.plugins.module_utils.common import safe_names
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.firewall.observe import observe
from ansible_collections.ncclkit.cluster.plugins.module_utils.host.files import write_atomically
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.firewall.rules import (
    OWN_NFT_TABLE,
    RuleError,
    make_spec,
    parse_chain,
)
from ansible_collections.ncclkit.cluster.plugins.module_utils.host.command import CommandTimeout, run_command
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.ports import PortError, parse_port_range

TOOLS = {"nftables": "nft", "iptables": "iptables", "ufw": "ufw", "firewalld": "firewall-cmd"}
# Long enough for firewalld to reload a large zone; a tool that takes longer hangs.
COMMAND_TIMEOUT_S = 60


def main():
    module = AnsibleModule(
        argument_spec={
            "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
            "backend": {"type": "str", "choices": list(backends.BACKENDS), "default": "auto"},
            "ifname": {"type": "str"},
            "sources": {"type": "list", "elements": "str"},
            "allow_wide_sources": {"type": "bool", "default": False},
            "port_range": {"type": "list", "elements": "int", "default": [32768, 60999]},
            "ports": {"type": "list", "elements": "int", "default": []},
            "icmp": {"type": "bool", "default": True},
            "drop_others": {"type": "bool", "default": True},
            "nftables_chains": {"type": "list", "elements": "str", "default": []},
            "firewalld_zone": {"type": "str", "default": ""},
            "state_dir": {"type": "path", "default": "/etc/ncclkit"},
        },
        required_if=[("state", "present", ("ifname", "sources"))],
        supports_check_mode=True,
    )
    params = module.params

    def command(argv, timeout=COMMAND_TIMEOUT_S, data=None):
        try:
            return run_command(argv, timeout, data=data, raise_timeout=True)
        except CommandTimeout as error:
            module.fail_json(msg=f"{error}: the firewall tool hangs (firewalld: is it and D-Bus up? "
                                 f"systemctl status firewalld dbus). ncclkit stopped there; run again once "
                                 f"the command answers.")

    spec = None
    try:
        if params["state"] == "present":
            spec = make_spec(params["ifname"], params["sources"], parse_port_range(params["port_range"]),
                             params["ports"], params["icmp"], params["drop_others"], params["allow_wide_sources"])
        chains = [" ".join(parse_chain(chain)) for chain in params["nftables_chains"]]
        if params["firewalld_zone"]:
            safe_names.zone(params["firewalld_zone"], "nccl_network_firewalld_zone")
        if not os.path.isabs(params["state_dir"]) or "\n" in params["state_dir"]:
            raise RuleError(f"state_dir is {params['state_dir']!r}: it must be an absolute path on one line")
    except (RuleError, PortError, safe_names.UnsafeName) as error:
        module.fail_json(msg=str(error))

    installed = {name: shutil.which(tool) is not None for name, tool in TOOLS.items()}
    seen = observe(command)
    backend, warnings = backends.choose_backend(params["backend"], seen, installed)
    if params["state"] == "present" and backend != "none" and not installed.get(backend):
        module.fail_json(msg=f"nccl_network_firewall is {backend} but {TOOLS[backend]} is not installed on this "
                             f"host: install it, or choose another backend (auto picks the active one)")
    if backend == "firewalld" and params["state"] == "present" and seen.get("firewalld") != "running":
        module.fail_json(msg="nccl_network_firewall is firewalld but firewalld is not running: start it "
                             "(systemctl start firewalld) or choose another backend; ncclkit never starts "
                             "a firewall")

    stored = _read_stored(params["state_dir"])
    zone = _zone(command, backend, params, stored, seen)
    _observe_own(command, seen, installed, zone)
    try:
        planned = backends.plan(params["state"], backend, spec, seen, stored, params["state_dir"],
                                user_chains=chains, zone=zone)
    except backends.PlanError as error:
        module.fail_json(msg=str(error), backend=backend)

    _drop_empty_state_dir(params, planned["actions"])
    _validate(module, command, planned["actions"])
    done = []
    for action in planned["actions"]:
        done.append(_describe(action))
        if not module.check_mode:
            _apply(module, command, action, stored)
    for warning in warnings + planned["warnings"]:
        module.warn(warning)
    result = {"changed": bool(planned["actions"]), "backend": planned["backend"], "actions": done,
              "rules": planned["after"]}
    if planned["actions"]:
        result["diff"] = {"before": "\n".join(planned["before"]) + "\n", "after": "\n".join(planned["after"]) + "\n",
                          "before_header": "ncclkit firewall rules", "after_header": "ncclkit firewall rules"}
    module.exit_json(**result)


def _drop_empty_state_dir(params, actions):
    """After `absent`, remove the state directory too when nothing but ncclkit's files was in it."""
    state_dir = params["state_dir"]
    if params["state"] != "absent" or not os.path.isdir(state_dir):
        return
    removed = {os.path.basename(action["remove"]) for action in actions if "remove" in action}
    if removed and set(os.listdir(state_dir)) <= removed:
        actions.append({"rmdir": state_dir})


def _read_stored(state_dir):
    stored = {}
    for name in list(backends.FILES.values()) + [backends.SCRIPT, backends.STATE]:
        try:
            with open(os.path.join(state_dir, name)) as handle:
                stored[name] = handle.read()
        except OSError:
            stored[name] = None
    return stored


def _zone(command, backend, params, stored, seen):
    """The firewalld zone: wanted (given, or the NIC's) when firewalld is the backend, else recorded."""
    if backend == "firewalld" and params["state"] == "present":
        if params["firewalld_zone"]:
            return params["firewalld_zone"]
        rc, out, dummy = command(["firewall-cmd", f"--get-zone-of-interface={params['ifname']}"])
        if rc == 0 and out.strip():
            return out.strip()
        return command(["firewall-cmd", "--get-default-zone"])[1].strip()
    record = json.loads(stored[backends.STATE]).get("firewalld") if stored.get(backends.STATE) else None
    return (record or {}).get("zone") or ""


def _observe_own(command, seen, installed, zone):
    rc, out, dummy = command(["nft", "list", "table", *OWN_NFT_TABLE])
    seen["nft_own_text"] = out if rc == 0 else ""
    if installed["ufw"]:
        seen["ufw_added"] = command(["ufw", "show", "added"])[1]
    if zone and seen.get("firewalld") == "running":
        for mode, extra in (("runtime", []), ("permanent", ["--permanent"])):
            rc, out, dummy = command(["firewall-cmd"] + extra + [f"--zone={zone}", "--list-rich-rules"])
            seen[f"firewalld_{mode}"] = out.splitlines() if rc == 0 else []


def _describe(action):
    if "write" in action:
        return f"write {action['write']}"
    if "remove" in action:
        return f"remove {action['remove']}"
    if "rmdir" in action:
        return f"remove the empty {action['rmdir']}"
    return " ".join(action["run"])


def _validate(module, command, actions):
    """Let nft check a new ruleset before anything is written (check mode included)."""
    for action in actions:
        if "write" in action and action["write"].endswith(backends.FILES["nftables"]):
            rc, out, err = command(["nft", "-c", "-f", "-"], data=action["content"])
            if rc != 0:
                module.fail_json(msg=f"nft rejects the rules ncclkit made, nothing was changed: {(err or out).strip()}")


def _apply(module, command, action, stored):
    if "write" in action:
        write_atomically(module, action["write"], action["content"])
    elif "remove" in action:
        if os.path.exists(action["remove"]):
            os.remove(action["remove"])
    elif "rmdir" in action:
        os.rmdir(action["rmdir"])
    else:
        rc, out, err = command(action["run"])
        if rc != 0:
            # Put the files back as they were, so a boot does not load what failed now.
            state_dir = os.path.dirname(action["run"][-1]) if action["run"][0] == "sh" else None
            for name, content in stored.items() if state_dir else ():
                path = os.path.join(state_dir, name)
                if content is None and os.path.exists(path):
                    os.remove(path)
                elif content is not None:
                    write_atomically(module, path, content)
            module.fail_json(msg=f"{' '.join(action['run'])} failed ({action['why']}): {(err or out).strip()}",
                             rc=rc)


if __name__ == "__main__":
    main()
