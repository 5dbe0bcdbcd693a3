#!/usr/bin/python
# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""This host's part of the cluster reachability check; run it on every host at once."""

from __future__ import annotations

DOCUMENTATION = r"""
module: nccl_reachability
short_description: Check that the cluster hosts reach each other on NCCL's ports, and say why not
description:
  - Run on every host of the cluster in one task (forks at least the number of hosts). Each host
    listens on its cluster address at O(ports) and starts an iperf3 server on O(iperf3_port).
    Then it probes its peers over the cluster NIC. It looks up the route (over netlink, no C(ip)
    command needed), sends a small and a large don't-fragment ping (the large one fills O(mtu)) and
    opens a TCP connection to each port (all at once, O(connect_timeout) each).
  - Then it measures TCP bandwidth in rounds, both directions of a link in one iperf3 test
    (C(--bidir), iperf3 3.7 or later), round 0 to its ring neighbour, then one random peer in
    each of O(iperf3_rounds) further rounds (from four hosts). Every round is a permutation, so
    each host is client of one test and server of one; a server still busy with another round's
    client is asked again shortly. Hosts it measures are probed as peers too.
  - Peers are the ring neighbours and the first host (V(ring), probes growing linearly with the hosts) or every other
    host (V(full)). Every host computes the same plan from O(hosts).
  - A host keeps its listeners up until each host that probes it says it is done, or until
    O(barrier_timeout) seconds after its start. One direction that works between two hosts is
    enough to finish early.
  - Also reads the host's own firewall (nftables, iptables, ufw, firewalld) for rules that may drop
    the ports, so that a verdict can name the firewall.
  - Returns the raw results; the C(ncclkit.cluster.reachability_report) filter turns every host's
    results into a matrix and verdicts. Changes nothing on the host.
version_added: 0.1.0
author: ncclkit maintainers (!UNKNOWN)
extends_documentation_fragment:
  - ncclkit.cluster.attributes
options:
  host:
    description: This host's inventory name, one of the names in O(hosts).
    type: str
    required: true
  hosts:
    description:
      - Every host of the check in play order, each a dict with C(name), C(address) (its cluster
        address), and optionally C(ifname), C(mtu) and C(alternates) (its other addresses, each
        C(address) and C(ifname), pinged when the cluster address does not answer).
    type: list
    elements: dict
    required: true
  ports:
    description: The TCP ports every host listens on and probes.
    type: list
    elements: int
    required: true
  mode:
    description: Which peers to probe.
    type: str
    choices: [ring, full]
    default: ring
  mtu:
    description: The cluster NIC's MTU; the large ping is this minus 28 bytes. Defaults to the host's C(mtu).
    type: int
  iperf3_port:
    description: Port of the iperf3 server (inside the NCCL range); 0 to skip the bandwidth test.
    type: int
    default: 0
  iperf3_seconds:
    description: Length of each bandwidth test.
    type: int
    default: 1
  iperf3_rounds:
    description:
      - Bandwidth rounds after the ring, each between random pairs (from four hosts; with two or
        three hosts the ring covers every pair). Each adds about O(iperf3_seconds) plus half a second.
    type: int
    default: 2
  iperf3_seed:
    description: Seed of the random rounds; every host must get the same one.
    type: int
    default: 0
  iperf3_gate_fraction:
    description:
      - The fraction of the median figure below which the gate calls a link slow
        (nccl_network_link_median_fraction). A test whose figure (either direction) is below 1.5
        times this fraction of the median of the host's own figures is run once more, and the
        better figure of each direction kept, so that a moment of load on one host does not count
        as a slow link. 0 never retests.
    type: float
    default: 0.5
  connect_timeout:
    description: Seconds to wait for a TCP connection or a banner.
    type: float
    default: 1.0
  startup_grace:
    description: Seconds during which refused connections are retried (the peer may not listen yet).
    type: float
    default: 3.0
  barrier_timeout:
    description:
      - Seconds after its start that a host waits at most for the hosts that probe it; at least
        as long as the bandwidth rounds can take (O(iperf3_seconds) plus 1.5 per round, after O(startup_grace)).
    type: float
    default: 8.0
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
"""

EXAMPLES = r"""
- name: Check the cluster network
  ncclkit.cluster.nccl_reachability:
    host: "{{ inventory_hostname }}"
    hosts:
      - {name: node1, address: 10.0.0.11, ifname: eth1, mtu: 1500}
      - {name: node2, address: 10.0.0.12, ifname: eth1, mtu: 1500}
    ports: [29500, 32768, 39826, 46883, 53941, 60999]
    iperf3_port: 32769
  register: reachability
"""

RETURN = r"""
reachability:
  description: This host's results.
  returned: always
  type: dict
  contains:
    probes:
      description: One entry per peer, with C(ping), C(ping_large), C(route_dev), C(ports) (port -> ok,
        timeout, refused, unreachable, foreign) and C(bandwidth_gbps) (this host's first test to that peer).
      type: list
      elements: dict
    links:
      description: This host's bandwidth tests as client, each C(round), C(target), C(sent_gbps) (to the
        target), C(received_gbps) (back from it, null without C(--bidir)), C(error) and C(attempts) (2 when retested).
      type: list
      elements: dict
    nic_speed_mbps:
      description: The cluster NIC's speed from /sys/class/net/IF/speed; null when unknown (-1, or a virtual NIC with no device behind it, such as veth).
      type: int
    listeners:
      description: Port -> C(ok) or why ncclkit could not listen there.
      type: dict
    firewall:
      description: C(active) firewalls and C(evidence), the rules that may drop TCP.
      type: dict
    probers_missing:
      description: Hosts that probe this one but never said they were done.
      type: list
      elements: str
    elapsed_s:
      description: Seconds this host spent in the check.
      type: float
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.firewall.evidence import describe, drops
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.firewall.observe import (
    active_firewalls,
    model,
    observe,
)
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.links.rounds import my_part, round_count
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.reachability.plan import (
    expected_probers,
    probe_peers,
)
from ansible_collections.ncclkit.cluster.plugins.module_utils.host.command import run_command
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.reachability.probe import Check


def main():
    module = AnsibleModule(
        argument_spec={
            "host": {"type": "str", "required": True},
            "hosts": {"type": "list", "elements": "dict", "required": True},
            "ports": {"type": "list", "elements": "int", "required": True},
            "mode": {"type": "str", "choices": ["ring", "full"], "default": "ring"},
            "mtu": {"type": "int"},
            "iperf3_port": {"type": "int", "default": 0},
            "iperf3_seconds": {"type": "int", "default": 1},
            "iperf3_rounds": {"type": "int", "default": 2},
            "iperf3_seed": {"type": "int", "default": 0},
            "iperf3_gate_fraction": {"type": "float", "default": 0.5},
            "connect_timeout": {"type": "float", "default": 1.0},
            "startup_grace": {"type": "float", "default": 3.0},
            "barrier_timeout": {"type": "float", "default": 8.0},
        },
        supports_check_mode=True,
    )
    params = dict(module.params)
    names = [host.get("name") for host in params["hosts"]]
    if params["host"] not in names:
        module.fail_json(msg=f"host {params['host']} is not among hosts ({', '.join(map(str, names))})")
    missing = [str(host.get("name")) for host in params["hosts"] if not host.get("address")]
    if missing:
        module.fail_json(msg=f"hosts without a cluster address: {', '.join(missing)}; run nccl_preflight first")
    if not params["ports"]:
        module.fail_json(msg="ports is empty: give the ports to listen on and probe")
    if params["iperf3_rounds"] < 0 or params["iperf3_seconds"] < 1:
        module.fail_json(msg="iperf3_rounds must be 0 or more and iperf3_seconds 1 or more")
    me, rounds, seed = params["host"], params["iperf3_rounds"], params["iperf3_seed"]
    measured = bool(params["iperf3_port"])
    tests, clients = my_part(names, me, rounds, seed) if measured else ([], [])
    params["link_tests"] = tests
    params["link_round_count"] = round_count(len(names), rounds) if measured else 0
    params["link_gate_fraction"] = params["iperf3_gate_fraction"]
    # The hosts it measures and the hosts that measure it join the probes, so that the barrier
    # keeps its iperf3 server up until its clients are done.
    targets = [test["target"] for test in tests]
    params["peers"] = _union(probe_peers(names, me, params["mode"]), targets)
    params["probers"] = _union(expected_probers(names, me, params["mode"]), [c for c in clients if c])

    by_name = {host["name"]: host for host in params["hosts"]}
    own = by_name[params["host"]]
    ports = params["ports"] + ([params["iperf3_port"]] if params["iperf3_port"] else [])

    def firewall():
        """Which of this host's own rules would drop its probers' connections, port by port."""
        seen = observe(run_command)
        rules = model(seen)
        found = []
        for prober in params["probers"]:
            grouped = {}
            for port in ports:
                for item in drops(rules, by_name[prober]["address"], port, own.get("ifname") or "",
                                  dest=own["address"]):
                    grouped.setdefault(describe(item), dict(item, source=prober, ports=[]))["ports"].append(port)
            found += grouped.values()
        return {"active": active_firewalls(seen), "drops": found}

    result = Check(params).run(evidence=firewall)
    module.exit_json(changed=False, reachability=result)


def _union(first, second):
    return first + [name for name in dict.fromkeys(second) if name not in first]


if __name__ == "__main__":
    main()
