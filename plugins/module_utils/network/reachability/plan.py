"""Who probes whom in the reachability check, and on which ports.

Pure Python 3.8+ standard library. Hosts are a list of inventory names in play order; every host
computes the same plan from the same list, so no coordination is needed to agree on it.

`ring` (the default) probes the two ring neighbours and the first host: O(N) probes in all, so a
1000-node cluster stays cheap, and every host is checked from two sides and against the master
(torchrun's rendezvous host). `full` probes every pair: O(N^2).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from ansible_collections.ncclkit.cluster.plugins.module_utils.network.ports import sample_ports

MODES = ("ring", "full")


def probe_peers(hosts: Sequence[str], me: str, mode: str = "ring") -> List[str]:
    """The hosts `me` pings, connects to and (the first of them in ring order) measures."""
    return _peers_at(list(hosts), list(hosts).index(me), mode)


def probe_plan(hosts: Sequence[str], mode: str = "ring") -> Dict[str, List[str]]:
    """probe_peers of every host, in O(N) for a ring (no index lookup per host)."""
    hosts = list(hosts)
    return {host: _peers_at(hosts, index, mode) for index, host in enumerate(hosts)}


def _peers_at(hosts: List[str], index: int, mode: str) -> List[str]:
    if mode not in MODES:
        raise ValueError(f"peers mode {mode!r} is not one of {', '.join(MODES)}")
    me = hosts[index]
    if mode == "full":
        return [host for host in hosts if host != me]
    count = len(hosts)
    wanted = [hosts[(index + 1) % count], hosts[(index - 1) % count], hosts[0]]
    peers: List[str] = []
    for host in wanted:
        if host != me and host not in peers:
            peers.append(host)
    return peers


def expected_probers(hosts: Sequence[str], me: str, mode: str = "ring") -> List[str]:
    """The hosts that probe `me`: `me` keeps its listeners up until each of them is done.

    O(N) per host: in a ring only `me`'s two neighbours probe it, and every host probes the first.
    """
    if mode not in MODES:
        raise ValueError(f"peers mode {mode!r} is not one of {', '.join(MODES)}")
    hosts = list(hosts)
    index = hosts.index(me)
    if mode == "full" or index == 0:
        return [host for host in hosts if host != me]
    count = len(hosts)
    neighbours = {(index - 1) % count, (index + 1) % count}
    return [hosts[position] for position in sorted(neighbours) if hosts[position] != me]


def bandwidth_peer(hosts: Sequence[str], me: str) -> Optional[str]:
    """The ring neighbour `me` measures TCP bandwidth to: each host's iperf3 server has one client."""
    if len(hosts) < 2:
        return None
    return hosts[(list(hosts).index(me) + 1) % len(hosts)]


def plan_ports(low: int, high: int, rendezvous: Sequence[int], between: int = 3) -> Dict[str, object]:
    """The ports every host listens on and probes, and the port of its iperf3 server.

    The iperf3 server sits inside the range (the firewall admits it there) on a port that is not
    sampled, so its listener and ncclkit's never collide.
    """
    sampled = sample_ports(low, high, between)
    listen = sorted(set(sampled) | {int(port) for port in rendezvous})
    iperf3 = next((port for port in range(low + 1, high) if port not in listen), None)
    return {"listen_ports": listen, "iperf3_port": iperf3}
