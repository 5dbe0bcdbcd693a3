"""Choose each host's cluster NIC: the one whose IPv4 network holds the other hosts' addresses.

Pure Python (stdlib only): the cluster_nic filter and the ncclkit package both use it.
Input per host is the nccl_preflight_nics fact: [{name, ipv4: [{address, prefix}], up, loopback}].
"""

from __future__ import annotations

import fnmatch
import ipaddress

# Container, bridge and overlay interfaces: other hosts usually cannot reach their addresses.
# The one list of them (diagnosis.rules warns when NCCL uses one).
VIRTUAL_NIC_PATTERNS = ("docker*", "veth*", "virbr*", "br-*", "cni*", "flannel*", "cali*", "tailscale*")
# Interfaces that never carry NCCL traffic between hosts, unless the user names one.
VIRTUAL_PATTERNS = ("lo", *VIRTUAL_NIC_PATTERNS)


class ClusterNicError(ValueError):
    """No NIC, or more than one, qualifies; the message lists the interfaces and the fix."""


def setting_text(name, value):
    """`value` of the variable `name` (nccl_preflight_ifname or _cluster_cidr), or ClusterNicError."""
    if not isinstance(value, str):
        raise ClusterNicError(f"{name} must be a string (an interface name or a CIDR), not {value!r}: "
                              "fix it in the inventory's group_vars or host_vars")
    return value


class Membership:
    """Whether every host has an address in a network, answered once per network for the cluster.

    Choosing every host's NIC then costs about O(hosts): the hosts of a cluster share a few
    networks (each answered once), and a network that other hosts are not in (a public /32) is
    answered by the first host found outside it.
    """

    def __init__(self, nics_by_host):
        self.addresses = {host: _addresses(nics) for host, nics in nics_by_host.items()}
        self._holds_all = {}

    def holds_all(self, network):
        if network not in self._holds_all:
            self._holds_all[network] = all(any(a in network for a in addresses)
                                           for addresses in self.addresses.values())
        return self._holds_all[network]


def choose_cluster_nic(host, nics_by_host, ifname=None, cluster_cidr=None, membership=None):
    """Return {ifname, address, prefix, network} for `host`, or raise ClusterNicError.

    Pass one `Membership(nics_by_host)` when choosing for many hosts of the same cluster.
    """
    own = nics_by_host[host]
    if ifname:
        return _named(host, own, ifname, nics_by_host)
    candidates = [nic for nic in own if _usable(nic)]
    if cluster_cidr:
        network = _parse_cidr(cluster_cidr)
        matches = _with_address_in(candidates, network)
        return _exactly_one(host, matches, nics_by_host,
                            f"in nccl_preflight_cluster_cidr {cluster_cidr}")
    if len(nics_by_host) == 1:
        # One host has no peers to match: its only NIC, else the one with the default route.
        pairs = [(nic, nic["ipv4"][0]) for nic in candidates]
        if len(pairs) > 1:
            pairs = [pair for pair in pairs if pair[0].get("default_route")]
        return _exactly_one(host, pairs, nics_by_host, "to choose on a one-host cluster")
    membership = membership or Membership(nics_by_host)
    matches = []
    for nic in candidates:
        for addr in nic["ipv4"]:
            # The host's own address is in the network: it holds the peers when it holds every host.
            if membership.holds_all(_network(addr)):
                matches.append((nic, addr))
    if not matches:
        _raise_if_down(host, own, membership)
    return _exactly_one(host, matches, nics_by_host, "whose network holds every other host")


def _raise_if_down(host, own, membership):
    """The cluster NIC is there, with its address, but down: say that, not "no NIC"."""
    for nic in own:
        if nic.get("up", True) or nic.get("loopback"):
            continue
        for addr in nic["ipv4"]:
            if membership.holds_all(_network(addr)):
                raise ClusterNicError(
                    f"{host}'s cluster NIC {nic['name']} ({addr['address']}/{addr['prefix']}) is down "
                    f"(cluster_nic_down): no traffic reaches the other hosts. Bring it up on {host} "
                    f"(ip link set {nic['name']} up) and find why it went down (link, cable, driver, "
                    "a network manager).")


def _named(host, own, ifname, nics_by_host):
    for nic in own:
        if nic["name"] == ifname and nic["ipv4"]:
            return _result(nic, nic["ipv4"][0])
    raise ClusterNicError(
        f"{host} has no interface {ifname} with an IPv4 address (nccl_preflight_ifname). "
        + _listing(nics_by_host)
        + " Set nccl_preflight_ifname to one of the interfaces listed.")


def _exactly_one(host, matches, nics_by_host, what):
    if len(matches) == 1:
        return _result(*matches[0])
    if not matches:
        problem = f"{host} has no NIC {what}"
    else:
        names = ", ".join(f"{nic['name']} ({addr['address']}/{addr['prefix']})" for nic, addr in matches)
        problem = f"{host} has more than one NIC {what}: {names}"
    raise ClusterNicError(
        f"{problem}. " + _listing(nics_by_host)
        + " Settle it with nccl_preflight_ifname (the interface name, e.g. eth1) or"
        " nccl_preflight_cluster_cidr (the cluster network, e.g. 10.0.0.0/16).")


def _listing(nics_by_host):
    lines = []
    for host, nics in nics_by_host.items():
        described = ", ".join(
            f"{nic['name']} " + (",".join(f"{a['address']}/{a['prefix']}" for a in nic["ipv4"]) or "no IPv4")
            for nic in nics if not nic.get("loopback"))
        lines.append(f"{host}: {described or 'no interfaces'}")
    return "Interfaces: " + "; ".join(lines) + "."


def _usable(nic):
    return (nic.get("up", True) and not nic.get("loopback") and nic["ipv4"]
            and not any(fnmatch.fnmatch(nic["name"], pattern) for pattern in VIRTUAL_PATTERNS))


def _with_address_in(nics, network):
    return [(nic, addr) for nic in nics for addr in nic["ipv4"]
            if ipaddress.ip_address(addr["address"]) in network]


def _addresses(nics):
    return [ipaddress.ip_address(addr["address"]) for nic in nics for addr in nic["ipv4"]]


def _network(addr):
    return ipaddress.ip_network(f"{addr['address']}/{addr['prefix']}", strict=False)


def _parse_cidr(cidr):
    try:
        return ipaddress.ip_network(cidr, strict=False)
    except ValueError as error:
        raise ClusterNicError(
            f"nccl_preflight_cluster_cidr {cidr!r} is not an IPv4 network ({error}); "
            "write it like 10.0.0.0/16.") from None


def _result(nic, addr):
    return {"ifname": nic["name"], "address": addr["address"], "prefix": addr["prefix"],
            "network": str(_network(addr))}
