"""Plan the changes that bring ncclkit's firewall rules to the wanted state, on any backend.

Pure Python 3.8+ standard library: `plan(...)` reads what `network.firewall.observe` saw and returns
actions (files to write or remove, commands to run), the text of ncclkit's rules before and
after, and warnings. The nccl_firewall module runs the actions (or, in check mode, only shows
them). ncclkit only ever touches what it owns: the table `inet ncclkit`, chains named `ncclkit`
in tables the user names, the iptables chain `NCCLKIT` and its one jump from INPUT, ufw rules
commented `ncclkit`, and the firewalld rich rules it recorded in its state file.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Dict, List, Optional, Sequence, Tuple

from . import rules
from .observe import active_firewalls, default_drop_chains, iptables_in_use

BACKENDS = ("auto", "nftables", "iptables", "ufw", "firewalld", "none")
FILES = {"nftables": "firewall.nft", "iptables": "firewall.iptables"}
SCRIPT = "firewall.sh"
STATE = "firewall.json"
# The firewall family each backend's rules live in: an accept only overrides drops of its own family.
DOMAIN = {"nftables": "nft", "iptables": "xt", "ufw": "xt", "firewalld": "firewalld"}


class PlanError(ValueError):
    """The wanted state cannot be reached safely; the message says why and what settles it."""


def choose_backend(wanted: str, seen: dict, installed: Dict[str, bool]) -> Tuple[str, List[str]]:
    """`auto` -> the firewall that manages the host; with none, nftables (or iptables) so that
    ncclkit's own rules close the ports to everyone else."""
    warnings = []
    if wanted != "auto":
        return wanted, warnings
    active = active_firewalls(seen)
    if active:
        if len(active) > 1:
            warnings.append(f"several firewalls are active ({', '.join(active)}); ncclkit uses {active[0]}: "
                            "set nccl_network_firewall to choose another")
        return active[0], warnings
    for backend in ("nftables", "iptables"):
        if installed.get(backend):
            return backend, warnings
    warnings.append("no firewall tool is installed (nft, iptables): ncclkit adds no rules")
    return "none", warnings


def blocking_chains(backend: str, seen: dict, user_chains: Sequence[str]) -> List[dict]:
    """Default-drop chains outside the backend's family: ncclkit's accepts cannot get past them."""
    domain = DOMAIN.get(backend)
    # Only an nftables backend can reach into the user's chains, and only those named.
    named = {" ".join(rules.parse_chain(chain)) for chain in user_chains} if domain == "nft" else set()
    found = [{"chain": chain, "domain": "nft"} for chain in default_drop_chains(seen) if chain not in named]
    if domain != "xt" and _iptables_drops(seen.get("iptables_save")):
        found.append({"chain": "iptables filter INPUT", "domain": "xt"})
    if domain != "firewalld" and seen.get("firewalld") == "running":
        found.append({"chain": "table inet firewalld", "domain": "firewalld"})
    return found


def blocking_message(backend: str, blocking: List[dict]) -> str:
    fixes = []
    domains = {item["domain"] for item in blocking}
    if "nft" in domains:
        fixes.append("with nccl_network_firewall: nftables, name those chains in nccl_network_nftables_chains "
                     "(e.g. ['inet filter input']): ncclkit then adds a jump to its accept rules at their top")
    if "xt" in domains:
        fixes.append("use nccl_network_firewall: iptables (or ufw where ufw is active)")
    if "firewalld" in domains:
        fixes.append("use nccl_network_firewall: firewalld")
    chains = ", ".join(item["chain"] for item in blocking)
    return (f"ncclkit's {backend} rules cannot admit the cluster: {chains} drop{'s' if len(blocking) == 1 else ''} "
            f"what {'it does' if len(blocking) == 1 else 'they do'} not accept, and an accept in another table "
            f"or firewall does not override that. Nothing was changed. Fix: {'; or '.join(fixes)}.")


def plan(state: str, backend: str, spec: Optional[dict], seen: dict, stored: dict, state_dir: str,
         user_chains: Sequence[str] = (), zone: str = "") -> dict:
    """-> {backend, actions, before, after, warnings}; raises PlanError when it cannot be done."""
    result = {"backend": backend if state == "present" else "none", "actions": [], "before": [],
              "after": [], "warnings": []}
    keep = backend if state == "present" else None
    if keep and keep != "none":
        blocking = blocking_chains(keep, seen, user_chains if keep == "nftables" else ())
        if blocking:
            raise PlanError(blocking_message(keep, blocking))
    _nftables(result, keep == "nftables", spec, seen, stored, state_dir, user_chains)
    _iptables(result, keep == "iptables", spec, seen, stored, state_dir)
    _ufw(result, keep == "ufw", spec, seen)
    _firewalld(result, keep == "firewalld", spec, seen, stored, zone)
    # Only firewalld's rules need a record: the other backends' own rules are found live (the
    # nftables table, the NCCLKIT chain, ufw's comment), and their fingerprint sits in those rules.
    record = {"firewalld": result.pop("_firewalld", None)}
    path = f"{state_dir}/{STATE}"
    if keep and keep != "none":
        script = _script(keep, state_dir, user_chains)
        _write(result, f"{state_dir}/{SCRIPT}", script, stored.get(SCRIPT))
        _write(result, path, json.dumps(record, indent=2, sort_keys=True) + "\n", stored.get(STATE))
    else:
        for name in (SCRIPT, STATE):
            if stored.get(name) is not None:
                result["actions"].append({"remove": f"{state_dir}/{name}"})
    result["actions"].sort(key=lambda action: _order(action, path))
    return result


def _order(action, record_path) -> int:
    """Files first, then commands: the script that a command runs must be the new one. The record
    last: when a command fails, it still names the rules ncclkit added before."""
    if "write" in action:
        return 2 if action["write"] == record_path else 0
    return 1 if "run" in action else 3


def _script(backend, state_dir, user_chains) -> str:
    lines = ["#!/bin/sh", "# ncclkit: restores ncclkit's firewall rules (ncclkit-firewall.service runs it at boot).",
             "set -e"]
    if backend == "nftables":
        lines += rules.nft_script(user_chains, f"{state_dir}/{FILES['nftables']}")
    elif backend == "iptables":
        lines += rules.iptables_script(f"{state_dir}/{FILES['iptables']}")
    else:
        lines.append(f"# {backend} keeps its own rules across reboots; nothing to restore here.")
    return "\n".join(lines) + "\n"


def _write(result, path, content, current):
    if current != content:
        result["actions"].append({"write": path, "content": content})


def _run(result, argv, why):
    result["actions"].append({"run": list(argv), "why": why})


# nftables ---------------------------------------------------------------------------------------

def _nft_items(seen):
    return [next(iter(item.items())) for item in (seen.get("nft") or {}).get("nftables", [])]


def _nftables(result, wanted, spec, seen, stored, state_dir, user_chains):
    items = _nft_items(seen)
    own = any(kind == "table" and (body["family"], body["name"]) == rules.OWN_NFT_TABLE
              for kind, body in items)
    user = [(body["family"], body["table"]) for kind, body in items
            if kind == "chain" and body["name"] == rules.USER_CHAIN and body["table"] != rules.OWN_TABLE]
    jumps = [body for kind, body in items if kind == "rule" and body["table"] != rules.OWN_TABLE
             and any(expr.get("jump", {}).get("target") == rules.USER_CHAIN for expr in body.get("expr", []))]
    current_mark = _nft_mark(seen.get("nft_own_text") or "")
    if own:
        result["before"] += (stored.get(FILES["nftables"]) or "").splitlines() \
            if stored.get(FILES["nftables"]) and current_mark and current_mark in stored[FILES["nftables"]] \
            else (seen.get("nft_own_text") or "").splitlines()
    if wanted:
        content = rules.nft_ruleset(spec, user_chains)
        result["after"] += content.splitlines()
        wanted_chains = {rules.parse_chain(chain) for chain in user_chains}
        jumped = {(rule["family"], rule["table"], rule["chain"]) for rule in jumps}
        live_ok = (current_mark == rules.fingerprint(spec, user_chains)
                   and all(chain in jumped for chain in wanted_chains))
        path = f"{state_dir}/{FILES['nftables']}"
        _write(result, path, content, stored.get(FILES["nftables"]))
        if not live_ok:
            _run(result, ["sh", f"{state_dir}/{SCRIPT}"], "load ncclkit's nftables rules")
        keep_tables = {chain[:2] for chain in wanted_chains}
    else:
        keep_tables = set()
        if own:
            _run(result, ["nft", "delete", "table", "inet", rules.OWN_TABLE], "remove ncclkit's nftables table")
        if stored.get(FILES["nftables"]) is not None:
            result["actions"].append({"remove": f"{state_dir}/{FILES['nftables']}"})
    for rule in jumps:
        if (rule["family"], rule["table"]) not in keep_tables:
            result["before"].append(f"{rule['family']} {rule['table']} {rule['chain']}: jump {rules.USER_CHAIN}")
            _run(result, ["nft", "delete", "rule", rule["family"], rule["table"], rule["chain"], "handle",
                          str(rule["handle"])], "remove ncclkit's jump from a user chain")
    for family, table in user:
        if (family, table) not in keep_tables:
            _run(result, ["nft", "delete", "chain", family, table, rules.USER_CHAIN],
                 "remove ncclkit's chain from a user table")


def _nft_mark(text):
    found = re.search(r'comment "' + rules.COMMENT + r' (\w+)"', text)
    return found.group(1) if found else None


# iptables ---------------------------------------------------------------------------------------

def _iptables_lines(save_text):
    table, lines = None, []
    for line in (save_text or "").splitlines():
        if line.startswith("*"):
            table = line[1:].strip()
        elif table == "filter" and (line.startswith(f"-A {rules.OWN_CHAIN} ")
                                    or line.strip() == f"-A INPUT -j {rules.OWN_CHAIN}"):
            lines.append(line.strip())
    return lines


def _iptables_drops(save_text) -> bool:
    """iptables' INPUT drops what it does not accept (ncclkit's jump aside)."""
    return iptables_in_use(save_text) and (
        ":INPUT DROP" in (save_text or "") or bool(re.search(r"^-A INPUT -j (DROP|REJECT)", save_text or "", re.M)))


def _iptables(result, wanted, spec, seen, stored, state_dir):
    save = seen.get("iptables_save") or ""
    current = _iptables_lines(save)
    has_chain = f":{rules.OWN_CHAIN} " in save
    result["before"] += current
    if wanted:
        content = rules.iptables_rules(spec)
        result["after"] += [line for line in content.splitlines() if line.startswith("-A")]
        result["after"].append(f"-A INPUT -j {rules.OWN_CHAIN}")
        mark = f'--comment "{rules.COMMENT} {rules.fingerprint(spec)}"'
        live_ok = any(mark in line for line in current) and f"-A INPUT -j {rules.OWN_CHAIN}" in current
        _write(result, f"{state_dir}/{FILES['iptables']}", content, stored.get(FILES["iptables"]))
        if not live_ok:
            _run(result, ["sh", f"{state_dir}/{SCRIPT}"], "load ncclkit's iptables chain")
        return
    for dummy in range(sum(1 for line in current if line.startswith("-A INPUT"))):
        _run(result, ["iptables", "-w", "-D", "INPUT", "-j", rules.OWN_CHAIN], "remove ncclkit's jump from INPUT")
    if has_chain:
        _run(result, ["iptables", "-w", "-F", rules.OWN_CHAIN], "empty ncclkit's iptables chain")
        _run(result, ["iptables", "-w", "-X", rules.OWN_CHAIN], "remove ncclkit's iptables chain")
    if stored.get(FILES["iptables"]) is not None:
        result["actions"].append({"remove": f"{state_dir}/{FILES['iptables']}"})


# ufw --------------------------------------------------------------------------------------------

def ufw_own_rules(added_text: str) -> List[str]:
    suffix = f"comment '{rules.COMMENT}'"
    return [line.strip()[4:] for line in (added_text or "").splitlines()
            if line.strip().startswith("ufw ") and line.strip().endswith(suffix)]


def _ufw(result, wanted, spec, seen):
    current = ufw_own_rules(seen.get("ufw_added"))
    result["before"] += [f"ufw {rule}" for rule in current]
    desired = rules.ufw_rules(spec) if wanted else []
    result["after"] += [f"ufw {rule}" for rule in desired]
    if wanted and seen.get("ufw") != "active":
        result["warnings"].append("ufw is not active: its rules, ncclkit's included, apply once you run "
                                  "`ufw enable` (ncclkit never enables a firewall)")
    if current == desired:
        return
    # ufw applies rules in order and inserts new ones last: re-adding keeps ncclkit's allows
    # ahead of its deny.
    for rule in current:
        _run(result, ["ufw", "delete"] + shlex.split(rule), "remove a ufw rule of ncclkit")
    for rule in desired:
        _run(result, ["ufw"] + shlex.split(rule), "add a ufw rule of ncclkit")


# firewalld --------------------------------------------------------------------------------------

def _firewalld(result, wanted, spec, seen, stored, zone):
    record = (json.loads(stored[STATE]).get("firewalld") if stored.get(STATE) else None) or {}
    old_zone, old_rules = record.get("zone"), record.get("rules", [])
    desired = rules.firewalld_rules(spec) if wanted else []
    stale = [rule for rule in old_rules if rule not in desired or old_zone != zone]
    if stale and seen.get("firewalld") != "running":
        # The record is the only list of these rules: forgetting it would leave them for good.
        raise PlanError(
            f"firewalld is not running, so ncclkit cannot remove the rich rules it added to zone {old_zone} "
            f"(they stay in its permanent configuration). Nothing was changed. Fix: start firewalld "
            f"(systemctl start firewalld) and run again, or remove them by hand: "
            + "; ".join(f"firewall-offline-cmd --zone={old_zone} --remove-rich-rule='{rule}'" for rule in stale)
            + f", then delete the record {STATE} in ncclkit's state directory.")
    live = {"runtime": seen.get("firewalld_runtime", []), "permanent": seen.get("firewalld_permanent", [])}
    result["before"] += [f"firewalld zone {old_zone}: {rule}" for rule in old_rules]
    if wanted:
        result["after"] += [f"firewalld zone {zone}: {rule}" for rule in desired]
        result["_firewalld"] = {"zone": zone, "rules": desired}
    for rule in stale:
        for mode in ("runtime", "permanent"):
            if old_zone != zone or rule in live[mode]:
                _run(result, _firewall_cmd(mode, old_zone, "--remove-rich-rule", rule),
                     f"remove a firewalld rich rule of ncclkit ({mode})")
    for rule in desired:
        for mode in ("runtime", "permanent"):
            if rule not in live[mode]:
                _run(result, _firewall_cmd(mode, zone, "--add-rich-rule", rule),
                     f"add a firewalld rich rule of ncclkit ({mode})")


def _firewall_cmd(mode, zone, verb, rule):
    return ["firewall-cmd"] + (["--permanent"] if mode == "permanent" else []) + [f"--zone={zone}", f"{verb}={rule}"]
