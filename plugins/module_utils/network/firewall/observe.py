"""What a host's firewalls look like right now: read-only commands, and what they mean.

Python 3.8+ standard library. `observe(command)` runs the commands (command(argv, timeout) ->
(rc, stdout, stderr), rc 127 when missing); everything else here is pure, for unit tests.
"""

from __future__ import annotations

import json
import re
from typing import List

from .evidence import ruleset_model
from .rules import OWN_CHAIN, OWN_NFT_TABLE

MANAGED = re.compile(r"table (\w+) (\S+) is managed by iptables-nft")
IPTABLES_TABLES = {"filter", "nat", "mangle", "raw", "security"}
IPTABLES_CHAINS = {"INPUT", "FORWARD", "OUTPUT", "PREROUTING", "POSTROUTING"}


def observe(command) -> dict:
    seen = {"nft": None, "nft_managed": [], "iptables_save": None, "ufw": None, "firewalld": None}
    rc, out, dummy = command(["nft", "-j", "list", "ruleset"], 10)
    if rc == 0:
        try:
            seen["nft"] = json.loads(out or '{"nftables": []}')
        except ValueError:
            seen["nft"] = None
        dummy, dummy, err = command(["nft", "list", "ruleset"], 10)
        managed = {tuple(pair) for pair in MANAGED.findall(err)} | iptables_layout_tables(seen["nft"])
        seen["nft_managed"] = sorted(list(pair) for pair in managed)
    rc, out, dummy = command(["iptables-save", "-t", "filter"], 10)
    if rc == 0:
        seen["iptables_save"] = out
    rc, out, dummy = command(["ufw", "status"], 10)
    if rc != 127:
        seen["ufw"] = "active" if "Status: active" in out else "inactive"
    rc, out, dummy = command(["firewall-cmd", "--state"], 10)
    if rc != 127:
        seen["firewalld"] = "running" if rc == 0 and "running" in out and "not" not in out else "not running"
    return seen


def iptables_layout_tables(ruleset) -> set:
    """Tables laid out as iptables-nft makes them (nft warns about those only sometimes):
    an iptables table name, and base chains named as iptables names them."""
    bases = {}
    for item in (ruleset or {}).get("nftables", []):
        chain = item.get("chain")
        if chain and chain.get("hook"):
            bases.setdefault((chain["family"], chain["table"]), []).append(chain["name"])
    return {key for key, names in bases.items()
            if key[0] in ("ip", "ip6") and key[1] in IPTABLES_TABLES and set(names) <= IPTABLES_CHAINS}


def model(seen: dict) -> dict:
    """The host's input-path rules, for network.firewall.evidence.drops."""
    return ruleset_model(seen.get("nft"), seen.get("nft_managed", []), seen.get("iptables_save"))


def native_tables(seen: dict) -> List[tuple]:
    """nft tables that filter and that nftables users wrote: with a base chain, and not
    iptables-nft's, ncclkit's or firewalld's."""
    managed = {tuple(pair) for pair in seen.get("nft_managed", [])}
    tables = []
    for item in (seen.get("nft") or {}).get("nftables", []):
        chain = item.get("chain")
        if chain and chain.get("hook"):
            key = (chain["family"], chain["table"])
            if key not in managed and key != OWN_NFT_TABLE and key[1] != "firewalld" and key not in tables:
                tables.append(key)
    return tables


def iptables_in_use(save_text) -> bool:
    """INPUT has a policy other than ACCEPT or a rule other than ncclkit's jump."""
    table = None
    for line in (save_text or "").splitlines():
        if line.startswith("*"):
            table = line[1:].strip()
        elif table == "filter" and line.startswith(":INPUT ") and line.split()[1] != "ACCEPT":
            return True
        elif table == "filter" and line.startswith("-A INPUT ") and line.strip() != f"-A INPUT -j {OWN_CHAIN}":
            return True
    return False


def active_firewalls(seen: dict) -> List[str]:
    """The firewalls that manage the host, most specific first (the order `auto` picks in)."""
    active = []
    if seen.get("firewalld") == "running":
        active.append("firewalld")
    if seen.get("ufw") == "active":
        active.append("ufw")
    elif iptables_in_use(seen.get("iptables_save")):
        active.append("iptables")
    if native_tables(seen):
        active.append("nftables")
    return active


def default_drop_chains(seen: dict) -> List[str]:
    """Native nft input chains that drop what no rule accepts: a policy drop, or a last rule
    that drops or rejects everything. ncclkit's own accepts cannot override them."""
    managed = {tuple(pair) for pair in seen.get("nft_managed", [])}
    chains, last_rule = [], {}
    for item in (seen.get("nft") or {}).get("nftables", []):
        if "rule" in item:
            rule = item["rule"]
            last_rule[(rule["family"], rule["table"], rule["chain"])] = rule
        elif "chain" in item:
            chains.append(item["chain"])
    found = []
    for chain in chains:
        key = (chain.get("family"), chain.get("table"), chain.get("name"))
        if (chain.get("hook") != "input" or key[0] not in ("ip", "inet") or key[:2] in managed
                or key[:2] == OWN_NFT_TABLE or key[1] == "firewalld"):
            continue
        last = last_rule.get(key)
        if chain.get("policy") == "drop" or (last and _drops_everything(last)):
            found.append(" ".join(key))
    return found


def _drops_everything(rule) -> bool:
    exprs = [expr for expr in rule.get("expr", []) if not {"counter", "log"} & set(expr)]
    return len(exprs) == 1 and ("drop" in exprs[0] or "reject" in exprs[0])
