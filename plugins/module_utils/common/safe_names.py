"""Names that reach a command, a script run as root, or a firewall rule: checked against strict rules.

Pure Python 3.8+ standard library; the nccl_firewall module and the safe_inputs filters share it.
Each check returns the value as a str, or raises UnsafeName with one line naming the variable,
the bad value and the rule. Quoting stays the caller's job (shlex.quote, Jinja's `quote`): these
rules keep out what quoting cannot, such as a line break in a comment or an option-like name.
"""

from __future__ import annotations

import re

# The kernel's dev_valid_name (1-15 bytes, no "/", ":" or whitespace, not "." or ".."), narrowed
# to characters no shell, nft or iptables reads specially; a leading "-" would read as an option.
IFNAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@-]{0,14}")
IFNAME_RULE = ("an interface name is 1-15 characters of letters, digits, _ . @ - (the kernel's limit), "
               "not starting with - or .")
# NCCL_SOCKET_IFNAME and friends: an optional ^ (exclude) and = (exact match), then names or name
# prefixes separated by commas, e.g. ^lo,docker or =eth1.
NCCL_IFNAME_LIST_RULE = ("NCCL's interface list is an optional ^ (exclude) and = (exact), then interface names "
                         "or prefixes separated by commas, e.g. =eth1 or ^lo,docker; " + IFNAME_RULE)
# nftables' identifier (its scanner: a letter, _ or . first, then letters, digits, _ . / -), without
# "/" and a leading "." so that the name is a plain word everywhere; nft limits names to 255 bytes.
NFT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,254}")
NFT_NAME_RULE = "an nftables table or chain name is a letter or _, then up to 254 letters, digits, _ . -"
NFT_FAMILIES = ("ip", "inet")
# firewalld zone names: its own rule (letters, digits, _ + -), at most 17 characters.
ZONE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_+-]{0,16}")
ZONE_RULE = "a firewalld zone name is 1-17 letters, digits, _ + -, not starting with + or -"
# Inventory names: a DNS name, an IPv4 or IPv6 address.
HOSTNAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,252}")
HOSTNAME_RULE = "a host name is a DNS name or an IP address: letters, digits, _ . : -, not starting with - or ."


class UnsafeName(ValueError):
    """A name that must not reach a command or a script; the message names variable, value and rule."""


def _refuse(variable: str, value, rule: str):
    raise UnsafeName(f"{variable} is {value!r}: {rule}")


def _full(pattern, value) -> bool:
    return isinstance(value, str) and pattern.fullmatch(value) is not None


def ifname(value, variable: str) -> str:
    if not _full(IFNAME, value) or len(value.encode()) > 15:
        _refuse(variable, value, IFNAME_RULE)
    return value


def nccl_ifname_list(value, variable: str) -> str:
    """NCCL_SOCKET_IFNAME syntax: `^` and `=` are NCCL's, the names as the kernel allows them."""
    body = value[1:] if isinstance(value, str) and value.startswith("^") else value
    body = body[1:] if isinstance(body, str) and body.startswith("=") else body
    if not isinstance(body, str) or not all(_full(IFNAME, name) and len(name.encode()) <= 15
                                            for name in body.split(",")):
        _refuse(variable, value, NCCL_IFNAME_LIST_RULE)
    return value


def nft_name(value, variable: str) -> str:
    if not _full(NFT_NAME, value):
        _refuse(variable, value, NFT_NAME_RULE)
    return value


def nft_chain(value, variable: str = "nccl_network_nftables_chains") -> tuple:
    """'FAMILY TABLE CHAIN' -> (family, table, chain), each checked."""
    words = value.split() if isinstance(value, str) else []
    if len(words) != 3 or words[0] not in NFT_FAMILIES:
        _refuse(variable, value, "an entry reads 'FAMILY TABLE CHAIN' with FAMILY ip or inet, "
                                 "e.g. 'inet filter input' (see `nft list chains`)")
    for word in words[1:]:
        if not _full(NFT_NAME, word):
            _refuse(variable, value, f"{word!r} is not a name: {NFT_NAME_RULE}")
    return words[0], words[1], words[2]


def zone(value, variable: str = "nccl_network_firewalld_zone") -> str:
    if not _full(ZONE, value):
        _refuse(variable, value, ZONE_RULE)
    return value


def hostname(value, variable: str = "inventory_hostname") -> str:
    if not _full(HOSTNAME, value):
        _refuse(variable, value, HOSTNAME_RULE)
    return value


CHECKS = {"ifname": ifname, "nccl_ifname_list": nccl_ifname_list, "nft_name": nft_name, "nft_chain": nft_chain,
          "zone": zone, "hostname": hostname}
