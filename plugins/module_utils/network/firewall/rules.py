"""The rules ncclkit adds, written out for each firewall backend.

Pure Python 3.8+ standard library. The rules admit TCP to the NCCL ports (the ephemeral range and
the rendezvous ports) and ICMP echo, from the cluster hosts only, on the cluster NIC only; with
`drop_others`, new connections to those ports from anyone else on that NIC are dropped (so the
range is closed even where nothing else drops traffic). SSH and every other port are left alone.
"""

from __future__ import annotations

import hashlib
import ipaddress
import shlex
from typing import List, Sequence, Tuple

from . import sources as firewall_sources
from ansible_collections.ncclkit.cluster.plugins.module_utils.common import safe_names
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.ports import describe, merge_ports

COMMENT = "ncclkit"
OWN_TABLE = "ncclkit"           # nftables: table inet ncclkit
OWN_NFT_TABLE = ("inet", OWN_TABLE)
OWN_CHAIN = "NCCLKIT"           # iptables: filter chain NCCLKIT, one jump from INPUT
USER_CHAIN = "ncclkit"          # nftables: regular chain added to a user's table
NFT_PRIORITY = -10              # before the usual filter chains (priority 0)
MULTIPORT_MAX = 15              # iptables multiport and ufw accept at most 15 ports (a range counts 2)


class RuleError(ValueError):
    """Bad input for the rules; the message names the variable and the fix."""


def make_spec(ifname: str, sources: Sequence[str], port_range: Tuple[int, int], ports: Sequence[int] = (),
              icmp: bool = True, drop_others: bool = True, allow_wide: bool = False) -> dict:
    try:
        safe_names.ifname(ifname, "the cluster NIC (ncclkit_cluster_ifname)")
        networks = firewall_sources.check_all(sources, allow_wide)
    except (safe_names.UnsafeName, firewall_sources.SourceError) as error:
        raise RuleError(str(error)) from None
    if not networks:
        raise RuleError("the rules need at least one IPv4 source: the cluster hosts' addresses or "
                        "nccl_network_sources")
    sources = [str(net) for net in ipaddress.collapse_addresses(networks)]
    return {"ifname": ifname, "sources": sources, "spans": merge_ports(ports, [tuple(port_range)]),
            "icmp": bool(icmp), "drop_others": bool(drop_others)}


def fingerprint(spec: dict, extra: Sequence = ()) -> str:
    text = repr((sorted(spec.items()), list(extra)))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _host(source: str) -> str:
    return source[:-3] if source.endswith("/32") else source


# nftables ---------------------------------------------------------------------------------------

def nft_ruleset(spec: dict, user_chains: Sequence[str] = ()) -> str:
    """`nft -f` input that replaces ncclkit's table (and its chains in user tables) atomically."""
    mark = fingerprint(spec, user_chains)
    ports = "{ " + describe(spec["spans"]) + " }"
    iif = f'iifname "{spec["ifname"]}"'
    elements = ", ".join(_host(source) for source in spec["sources"])
    accepts = [f"{iif} ip saddr @cluster tcp dport {ports} accept"]
    if spec["icmp"]:
        accepts.append(f"{iif} ip saddr @cluster icmp type echo-request accept")
    lines = [
        f"# {COMMENT}: NCCL ports for the cluster hosts on {spec['ifname']} (generated; edits are replaced)",
        f"table inet {OWN_TABLE}",
        f"delete table inet {OWN_TABLE}",
        f"table inet {OWN_TABLE} {{",
        f'\tcomment "{COMMENT} {mark}"',
        "\tset cluster {",
        "\t\ttype ipv4_addr",
        "\t\tflags interval",
        f"\t\telements = {{ {elements} }}",
        "\t}",
        "\tchain input {",
        f"\t\ttype filter hook input priority {NFT_PRIORITY}; policy accept;",
        *(f"\t\t{rule}" for rule in accepts),
    ]
    if spec["drop_others"]:
        lines.append(f"\t\t{iif} tcp dport {ports} ct state new drop")
    lines += ["\t}", "}"]
    for chain in user_chains:
        family, table, dummy = parse_chain(chain)
        lines += [f"table {family} {table} {{", f"\tchain {USER_CHAIN} {{", "\t}", "}",
                  f"flush chain {family} {table} {USER_CHAIN}"]
        lines += [f"add rule {family} {table} {USER_CHAIN} " + rule.replace("@cluster", "{ " + elements + " }")
                  for rule in accepts]
    return "\n".join(lines) + "\n"


def parse_chain(text: str) -> Tuple[str, str, str]:
    try:
        return safe_names.nft_chain(text, "nccl_network_nftables_chains")
    except safe_names.UnsafeName as error:
        raise RuleError(str(error)) from None


def nft_script(user_chains: Sequence[str], path: str) -> List[str]:
    lines = [f"nft -f {shlex.quote(path)}"]
    for chain in user_chains:
        words = " ".join(shlex.quote(word) for word in parse_chain(chain))
        lines.append(f"nft list chain {words} | grep -qw 'jump {USER_CHAIN}' || "
                     f"nft insert rule {words} jump {USER_CHAIN}")
    return lines


# iptables ---------------------------------------------------------------------------------------

def _port_groups(spans) -> List[str]:
    groups, current, weight = [], [], 0
    for low, high in spans:
        cost = 1 if low == high else 2
        if weight + cost > MULTIPORT_MAX:
            groups.append(current)
            current, weight = [], 0
        current.append((low, high))
        weight += cost
    if current:
        groups.append(current)
    return [describe(group, joiner=",", dash=":") for group in groups]


def iptables_rules(spec: dict) -> str:
    """`iptables-restore --noflush` input: declaring the chain empties it, then ncclkit's rules."""
    iif = spec["ifname"]
    lines = ["*filter", f":{OWN_CHAIN} - [0:0]",
             f'-A {OWN_CHAIN} -m comment --comment "{COMMENT} {fingerprint(spec)}"']
    for source in spec["sources"]:
        for group in _port_groups(spec["spans"]):
            lines.append(f"-A {OWN_CHAIN} -s {source} -i {iif} -p tcp -m multiport --dports {group} -j ACCEPT")
        if spec["icmp"]:
            lines.append(f"-A {OWN_CHAIN} -s {source} -i {iif} -p icmp -m icmp --icmp-type 8 -j ACCEPT")
    if spec["drop_others"]:
        for group in _port_groups(spec["spans"]):
            lines.append(f"-A {OWN_CHAIN} -i {iif} -p tcp -m multiport --dports {group} "
                         "-m conntrack --ctstate NEW -j DROP")
    return "\n".join(lines + ["COMMIT"]) + "\n"


def iptables_script(path: str) -> List[str]:
    return [f"iptables-restore -w --noflush {shlex.quote(path)}",
            f"iptables -w -C INPUT -j {OWN_CHAIN} 2>/dev/null || iptables -w -I INPUT 1 -j {OWN_CHAIN}"]


# ufw --------------------------------------------------------------------------------------------

def ufw_rules(spec: dict) -> List[str]:
    """Rules as `ufw show added` prints them (without the leading `ufw`), in the order they apply.

    ufw cannot match ICMP in a rule; its before.rules already accept echo requests.
    """
    iif, rules = spec["ifname"], []
    for source in spec["sources"]:
        for group in _port_groups(spec["spans"]):
            rules.append(f"allow in on {iif} from {_host(source)} to any port {group} proto tcp "
                         f"comment '{COMMENT}'")
    if spec["drop_others"]:
        for group in _port_groups(spec["spans"]):
            rules.append(f"deny in on {iif} to any port {group} proto tcp comment '{COMMENT}'")
    return rules


# firewalld --------------------------------------------------------------------------------------

def firewalld_rules(spec: dict) -> List[str]:
    """Rich rules for the cluster NIC's zone; the zone's own target turns everyone else away."""
    rules = []
    for source in spec["sources"]:
        address = _host(source)
        for low, high in spec["spans"]:
            port = str(low) if low == high else f"{low}-{high}"
            rules.append(f'rule family="ipv4" source address="{address}" port port="{port}" protocol="tcp" accept')
        if spec["icmp"]:
            rules.append(f'rule family="ipv4" source address="{address}" icmp-type name="echo-request" accept')
    return rules
