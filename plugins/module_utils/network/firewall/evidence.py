"""Would this host's own firewall drop a new TCP connection from a peer to a port? And by which rule?

Pure Python 3.8+ standard library. Inputs are what the host prints: `nft -j list ruleset` (native
nftables tables; the tables iptables-nft manages are read from `iptables-save` instead, where
their rules keep iptables' meaning) and `iptables-save`.

`ruleset_model` turns both into chains of rules; `drops` walks them for one connection as the
kernel would: every nftables base chain on the input hook in priority order (an accept ends one
chain, a drop ends all), following jumps, gotos and returns, then the chain's policy. A match it
cannot read (marks, rate limits, ...) is assumed to hold for a drop and not for an accept, so the
answer errs towards "may drop": it names suspects for a connection that the probes saw fail.
"""

from __future__ import annotations

import ipaddress
import shlex
from typing import Dict, List, Optional

from .rules import OWN_CHAIN, OWN_NFT_TABLE, USER_CHAIN
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.ports import covers

TERMINAL = ("accept", "drop", "reject")
# Expressions that neither match nor decide.
NEUTRAL = ("counter", "log", "comment", "notrack")


def ruleset_model(nft: Optional[dict], managed_tables=(), iptables_save: Optional[str] = None) -> dict:
    """The input chains of both rulesets. A ruleset of a shape this reader does not know (another
    nft version, a cut-off dump) is left out and named in `unreadable`: the verdicts then cannot
    blame a rule in it, and say nothing rather than something wrong."""
    chains: Dict[str, dict] = {}
    bases: List[tuple] = []
    unreadable = []
    for name, read in (("nft", lambda: _nft_model(nft, {tuple(table) for table in managed_tables}, chains, bases)),
                       ("iptables", lambda: _iptables_model(iptables_save, chains, bases))):
        if not (nft if name == "nft" else iptables_save):
            continue
        kept = (dict(chains), list(bases))
        try:
            read()
        except (AttributeError, KeyError, TypeError, ValueError, IndexError, StopIteration) as error:
            chains.clear()
            chains.update(kept[0])
            bases[:] = kept[1]
            unreadable.append("{0} ruleset: {1}".format(name, type(error).__name__))
    bases.sort()
    model = {"chains": chains, "bases": [name for dummy, name in bases]}
    if unreadable:
        model["unreadable"] = unreadable
    return model


def drops(model: dict, source: str, port: int, ifname: str, dest: Optional[str] = None) -> List[dict]:
    """The rules (or policies) that drop a new TCP connection from `source` to `dest`:`port`
    arriving on `ifname`."""
    probe = {"source": ipaddress.ip_address(source), "port": int(port), "ifname": ifname,
             "dest": ipaddress.ip_address(dest) if dest else None}
    found = []
    for base in model["bases"]:
        outcome = _walk(model["chains"], base, probe, depth=0)
        chain = model["chains"][base]
        if outcome is None and chain.get("policy") == "drop":
            outcome = {"verdict": "drop", "text": "policy drop", "kind": "policy",
                       "firewall": chain["firewall"], "where": chain["where"]}
        if outcome and outcome["verdict"] in ("drop", "reject"):
            found.append({key: outcome[key] for key in ("firewall", "where", "text", "kind")})
    return found


def describe(item: dict) -> str:
    return f"{item['firewall']}: {item['where']}: {item['text']}"


def _walk(chains, name, probe, depth):
    """First decision in chain `name` and the chains it jumps to; None when it falls through."""
    chain = chains.get(name)
    if chain is None or depth > 16:
        return None
    for rule in chain["rules"]:
        if rule["match"] is None:
            continue
        hit = _matches(rule["match"], probe)
        verdict = rule["verdict"]
        if hit is None or rule["unknown"]:
            # Unreadable: a drop may hit; an accept, jump or return is assumed not to.
            hit = hit is not False and verdict in ("drop", "reject")
        if not hit:
            continue
        if verdict in TERMINAL:
            kind = "port" if "ports" in rule["match"] else "any"
            return {"verdict": verdict, "text": rule["text"], "kind": kind, "firewall": rule["firewall"],
                    "where": chain["where"]}
        if verdict in ("jump", "goto"):
            outcome = _walk(chains, rule["target"], probe, depth + 1)
            if outcome is not None or verdict == "goto":
                return outcome
        if verdict == "return":
            return None
    return None


def _matches(match: dict, probe: dict) -> Optional[bool]:
    """True, False, or None when the match depends on what the probe does not say."""
    if match.get("proto", "tcp") != "tcp":
        return False
    if "ports" in match and covers(match["ports"], probe["port"]) == match.get("ports_negated", False):
        return False
    if "iifname" in match and _ifname_matches(match["iifname"], probe["ifname"]) == match.get("iifname_negated",
                                                                                              False):
        return False
    if "saddr" in match:
        inside = any(probe["source"] in ipaddress.ip_network(net, strict=False) for net in match["saddr"])
        if inside == match.get("saddr_negated", False):
            return False
    if "daddr" in match:
        if probe["dest"] is None:
            return None
        inside = any(probe["dest"] in ipaddress.ip_network(net, strict=False) for net in match["daddr"])
        if inside == match.get("daddr_negated", False):
            return False
    if "dst_type" in match:
        # ncclkit probes a unicast address of the host itself.
        if (match["dst_type"] == "LOCAL") == match.get("dst_type_negated", False):
            return False
    return True


def _ifname_matches(pattern: str, ifname: str) -> bool:
    if pattern.endswith(("*", "+")):
        return ifname.startswith(pattern[:-1])
    return pattern == ifname


# nftables ---------------------------------------------------------------------------------------

def _nft_owner(family, table, chain):
    if (family, table) == OWN_NFT_TABLE or chain == USER_CHAIN:
        return "ncclkit"
    if table == "firewalld":
        return "firewalld"
    return "nftables"


def _nft_model(ruleset, managed, chains, bases):
    items = [next(iter(item.items())) for item in ruleset.get("nftables", [])]
    sets = {}
    for kind, body in items:
        if kind == "set":
            sets[(body.get("family"), body.get("table"), body.get("name"))] = body.get("elem", [])
    for kind, body in items:
        family, table = body.get("family"), body.get("table")
        if family not in ("ip", "inet") or (family, table) in managed:
            continue
        if kind == "chain":
            name = f"nft {family} {table} {body['name']}"
            chains.setdefault(name, {"rules": []}).update(
                policy=body.get("policy"), where=f"table {family} {table} chain {body['name']}",
                firewall=_nft_owner(family, table, body["name"]))
            if body.get("hook") == "input":
                bases.append(((0, int(body.get("prio", 0))), name))
        elif kind == "rule":
            name = f"nft {family} {table} {body['chain']}"
            chains.setdefault(name, {"rules": []})["rules"].append(
                _nft_rule(body, sets, f"nft {family} {table} ", _nft_owner(family, table, body["chain"])))


def _nft_rule(rule, sets, prefix, owner):
    match, unknown, verdict, target = {}, False, None, None
    for expr in rule.get("expr", []):
        kind = next(iter(expr))
        if kind == "match":
            state = _nft_match(expr["match"], sets, prefix, match)
            if state is False:
                match = None
                break
            unknown = unknown or state is None
        elif kind in TERMINAL or kind == "return":
            verdict = kind
        elif kind in ("jump", "goto"):
            verdict, target = kind, prefix + expr[kind]["target"]
        elif kind not in NEUTRAL:
            unknown = True
    return {"match": match, "unknown": unknown, "verdict": verdict, "target": target,
            "text": _nft_text(rule.get("expr", [])), "firewall": owner}


def _nft_match(body, sets, prefix, match):
    """Fill `match` from one nft match: True when understood, None when not, False when the rule
    can never match a new TCP connection."""
    left, right, negated = body.get("left", {}), body.get("right"), body.get("op") == "!="
    if "payload" in left:
        field = left["payload"]
        protocol, name = field.get("protocol"), field.get("field")
        if name == "dport" and protocol in ("tcp", "th"):
            match["ports"], match["ports_negated"] = _nft_ports(right, sets, prefix), negated
            return True
        if protocol in ("udp", "icmp", "sctp", "udplite", "icmpv6", "ip6"):
            return False
        if protocol == "ip" and name in ("saddr", "daddr"):
            match[name], match[f"{name}_negated"] = _nft_addresses(right, sets, prefix), negated
            return True
        if protocol == "ip" and name == "protocol":
            return (right == "tcp") != negated
        return None
    if "meta" in left:
        key = left["meta"].get("key")
        if key in ("iifname", "iif") and isinstance(right, str):
            match["iifname"], match["iifname_negated"] = right, negated
            return True
        if key in ("l4proto", "nfproto"):
            values = _flat(right)
            wanted = "tcp" if key == "l4proto" else "ipv4"
            return (wanted in values) != negated
        return None
    if "ct" in left and left["ct"].get("key") == "state":
        return ("new" in _flat(right)) != negated
    return None


def _flat(value):
    if isinstance(value, dict) and "set" in value:
        value = value["set"]
    values = value if isinstance(value, list) else [value]
    return [item for entry in values for item in (entry if isinstance(entry, list) else [entry])]


def _nft_values(right, sets, prefix):
    if isinstance(right, str) and right.startswith("@"):
        family, table = prefix.split()[1:3]
        return sets.get((family, table, right[1:]), [])
    if isinstance(right, dict) and "set" in right:
        return right["set"]
    return [right]


def _nft_ports(right, sets, prefix):
    spans = []
    for value in _nft_values(right, sets, prefix):
        if isinstance(value, dict) and "range" in value:
            spans.append(tuple(int(v) for v in value["range"]))
        elif isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
            spans.append((int(value), int(value)))
    return spans


def _nft_addresses(right, sets, prefix):
    nets = []
    for value in _nft_values(right, sets, prefix):
        if isinstance(value, dict) and "prefix" in value:
            nets.append(f"{value['prefix']['addr']}/{value['prefix']['len']}")
        elif isinstance(value, dict) and "range" in value:
            low, high = (ipaddress.ip_address(v) for v in value["range"])
            nets.extend(str(net) for net in ipaddress.summarize_address_range(low, high))
        elif isinstance(value, str):
            nets.append(value)
    return nets


def _nft_text(exprs) -> str:
    words = []
    for expr in exprs:
        kind = next(iter(expr))
        if kind == "match":
            body = expr["match"]
            left = body.get("left", {})
            if "payload" in left:
                name = f"{left['payload'].get('protocol')} {left['payload'].get('field')}"
            elif "meta" in left:
                name = left["meta"].get("key", "meta")
            elif "ct" in left:
                name = f"ct {left['ct'].get('key')}"
            else:
                name = next(iter(left), "?")
            op = "" if body.get("op") in ("==", "in") else f"{body.get('op')} "
            words.append(f"{name} {op}{_nft_value_text(body.get('right'))}")
        elif kind in ("jump", "goto"):
            words.append(f"{kind} {expr[kind]['target']}")
        elif kind not in ("counter",):
            words.append(kind)
    return " ".join(words)


def _nft_value_text(value) -> str:
    if isinstance(value, dict) and "set" in value:
        return "{ " + ", ".join(_nft_value_text(v) for v in value["set"]) + " }"
    if isinstance(value, dict) and "range" in value:
        return "-".join(str(v) for v in value["range"])
    if isinstance(value, dict) and "prefix" in value:
        return f"{value['prefix']['addr']}/{value['prefix']['len']}"
    if isinstance(value, list):
        return ",".join(_nft_value_text(v) for v in value)
    return str(value)


# iptables ---------------------------------------------------------------------------------------

def _iptables_model(save_text, chains, bases):
    table, names = None, []
    for line in save_text.splitlines():
        line = line.strip()
        if line.startswith("*"):
            table = line[1:]
        elif table == "filter" and line.startswith(":"):
            name, policy = line[1:].split()[:2]
            names.append(name)
            chains[f"xt {name}"] = {"rules": [], "policy": policy.lower() if policy != "-" else None,
                                    "where": f"iptables filter {name}"}
        elif table == "filter" and line.startswith("-A "):
            words = shlex.split(line)
            key = f"xt {words[1]}"
            chains.setdefault(key, {"rules": [], "policy": None, "where": f"iptables filter {words[1]}"})
            chains[key]["rules"].append(_iptables_rule(words, line, names))
    owner = _iptables_owner(names)
    for name in names:
        chain = chains[f"xt {name}"]
        chain["firewall"] = "ncclkit" if name == OWN_CHAIN else owner
        for rule in chain["rules"]:
            rule["firewall"] = chain["firewall"]
    if "xt INPUT" in chains:
        # iptables' filter INPUT hooks in at priority 0, after raw/mangle: order it among nft chains.
        bases.append(((0, 0), "xt INPUT"))


def _iptables_owner(names) -> str:
    if any(name.startswith("ufw-") for name in names):
        return "ufw"
    if any(name.startswith(("IN_", "INPUT_direct")) for name in names):
        return "firewalld"
    return "iptables"


def _iptables_rule(words, line, known_chains):
    match: Optional[dict] = {}
    unknown, verdict, target = False, None, None
    negate = False
    index = 2
    while index < len(words):
        word = words[index]
        if word == "!":
            negate = True
            index += 1
            continue
        has_value = index + 1 < len(words) and words[index + 1] != "!" and not words[index + 1].startswith("-")
        value = words[index + 1] if has_value else ""
        if word in ("-j", "-g"):
            if value in ("ACCEPT", "DROP", "REJECT"):
                verdict = value.lower()
            elif value == "RETURN":
                verdict = "return"
            elif value in known_chains:
                verdict, target = ("jump" if word == "-j" else "goto"), f"xt {value}"
            # Other targets (LOG, MARK, NFLOG, ...) decide nothing.
        elif word == "-p":
            if (value not in ("tcp", "6", "all")) != negate:
                match = None
                break
        elif word == "-i":
            match["iifname"], match["iifname_negated"] = value, negate
        elif word in ("-s", "-d"):
            key = "saddr" if word == "-s" else "daddr"
            match[key], match[f"{key}_negated"] = value.split(","), negate
        elif word == "--dst-type":
            match["dst_type"], match["dst_type_negated"] = value.split(",")[0], negate
        elif word in ("--dport", "--dports", "--destination-port", "--destination-ports"):
            match["ports"] = [tuple(int(p) for p in (part.split(":") * 2)[:2]) for part in value.split(",")]
            match["ports_negated"] = negate
        elif word in ("--ctstate", "--state"):
            if ("NEW" in value.split(",")) == negate:
                match = None
                break
        elif word == "--syn":
            if negate:
                match = None
                break
        elif word in ("-m", "--comment", "--reject-with", "--log-prefix", "--log-level"):
            pass
        elif word.startswith("-"):
            unknown = True
        index += 2 if has_value else 1
        negate = False
    return {"match": match, "unknown": unknown, "verdict": verdict, "target": target, "text": line,
            "firewall": None}
