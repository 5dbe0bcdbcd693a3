"""Who the firewall admits: each source checked so that no typo opens NCCL's ports wider than meant.

Pure Python 3.8+ standard library; network.firewall.rules (the nccl_firewall module) and the role's
preflight (the safe_inputs filters) share it, so the role refuses before it changes anything.
"""

from __future__ import annotations

import ipaddress
from typing import List, Sequence

# Shorter prefixes admit more than any one site's private network (10.0.0.0/8 is the widest).
WIDEST_PREFIX = 8
WHERE = "nccl_network_sources, or a host's ncclkit_cluster_ip"


class SourceError(ValueError):
    """A source the firewall must not admit; the message names it, the rule and the fix."""


def check(source, allow_wide: bool = False):
    """One source -> its ip_network (a bare address is a /32); raises SourceError."""
    text = str(source).strip()
    try:
        network = ipaddress.ip_network(text, strict=False)
    except ValueError:
        raise SourceError(f"source {text!r} is not an IPv4 address or network ({WHERE}); "
                          "write e.g. 10.0.0.11 or 10.0.0.0/16") from None
    if network.version != 4:
        raise SourceError(
            f"source {text!r} is IPv6 ({WHERE}): ncclkit's firewall rules admit IPv4 peers only, and nothing was "
            "changed. Fix: give the hosts' IPv4 addresses (nccl_preflight picks the cluster NIC's IPv4 address), "
            "or set nccl_network_firewall: none and admit the IPv6 peers in your own firewall")
    try:
        ipaddress.ip_network(text)
    except ValueError:
        raise SourceError(
            f"source {text!r} has host bits set ({WHERE}): as a network it is {network}, "
            f"{network.num_addresses} addresses, and ncclkit does not guess which was meant. Fix: write "
            f"{text.split('/', maxsplit=1)[0]} for the one host, or the network you meant with its own address "
            f"(e.g. {network} for /{network.prefixlen})") from None
    if network.prefixlen < WIDEST_PREFIX and not allow_wide:
        raise SourceError(
            f"source {text!r} is wider than /{WIDEST_PREFIX} ({WHERE}) and admits {network.num_addresses} addresses "
            f"to NCCL's ports. Fix: give the cluster's own network (e.g. 10.0.0.0/16), or set "
            "nccl_network_allow_wide_sources: true if you mean it")
    return network


def check_all(sources: Sequence, allow_wide: bool = False) -> List:
    return [check(source, allow_wide) for source in sources]


def problems(sources: Sequence, allow_wide: bool = False) -> List[str]:
    """Every bad source's message, for a preflight that names them all at once."""
    found = []
    for source in sources or []:
        try:
            check(source, allow_wide)
        except SourceError as error:
            found.append(str(error))
    return found
