#!/usr/bin/python
# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""One end of a pair test of nccl_validate's slow-node search: an iperf3 server, or its client."""

from __future__ import annotations

DOCUMENTATION = r"""
module: nccl_pair_perf
short_description: One end of a pairwise bandwidth test (iperf3, both directions) between two nodes
description:
  - The slow-node search of the nccl_validate role pairs the nodes in rounds; in each round every
    pair runs at once. This module is one end of one pair.
  - C(role=server) starts a one-shot C(iperf3 -s -1) bound to O(address) and O(port), stopped
    after O(timeout_s) by C(timeout) should no client come, and returns once it listens.
  - C(role=client) runs C(iperf3 -c peer_address --bidir -J) for O(seconds), retrying a refused
    connection while the server starts, and returns the Gbit/s received in each direction and the
    slower of the two (a throttled NIC slows only the direction it sends).
  - Changes nothing on the host (the server ends with its one test).
version_added: 0.3.0
author: ncclkit maintainers (!UNKNOWN)
attributes:
  check_mode:
    support: full
    details: In check mode nothing is started and the result says so.
  diff_mode:
    support: none
extends_documentation_fragment:
  - ncclkit.cluster.attributes
options:
  role:
    description: Which end this host is.
    type: str
    choices: [server, client]
    required: true
  address:
    description: This host's cluster address (the test runs over the cluster NIC).
    type: str
    required: true
  peer_address:
    description: The server's address (client only).
    type: str
    default: ""
  port:
    description: The server's TCP port (inside the NCCL port range that the firewall admits).
    type: int
    required: true
  seconds:
    description: Length of the test.
    type: int
    default: 2
  timeout_s:
    description: The server's lifetime without a client, and the client's limit beyond O(seconds).
    type: int
    default: 30
"""

EXAMPLES = r"""
- name: Serve this round's pair test
  ncclkit.cluster.nccl_pair_perf:
    role: server
    address: 198.19.45.11
    port: 29400
"""

RETURN = r"""
gbps:
  description: The slower direction in Gbit/s (client; null on failure).
  returned: always
  type: float
forward_gbps:
  description: Gbit/s from the client to the server (client).
  returned: always
  type: float
reverse_gbps:
  description: Gbit/s from the server to the client (client).
  returned: always
  type: float
error:
  description: Why the test failed (empty when it ran).
  returned: always
  type: str
"""

import ipaddress
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ncclkit.cluster.plugins.module_utils.host.command import (
    TIMED_OUT,
    run_command,
    start_detached,
)
from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.pair_rounds import iperf3_bidir_gbps

# How long a client retries a refused connection while its server starts.
_CONNECT_RETRY_S = 10


def _listening(port):
    """Whether a TCP socket listens on `port` in this network namespace (state 0A in /proc/net/tcp)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as handle:
                rows = handle.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 3 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                return True
    return False


def serve(module, params):
    argv = ["timeout", str(params["timeout_s"]), "iperf3", "-s", "-1", "-B", params["address"],
            "-p", str(params["port"])]
    try:
        server = start_detached(argv)
    except OSError as error:
        return {"error": "cannot start iperf3: {0} (install iperf3)".format(error)}
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if server.poll() is not None:
            return {"error": "iperf3 -s exited {0} (port {1} in use, or {2} not this host's)".format(
                server.returncode, params["port"], params["address"])}
        if _listening(params["port"]):
            return {"error": ""}
        time.sleep(0.05)
    return {"error": "iperf3 -s did not listen on port {0} within 5 s".format(params["port"])}


def measure(module, params):
    argv = ["iperf3", "-c", params["peer_address"], "-B", params["address"], "-p", str(params["port"]),
            "-t", str(params["seconds"]), "-J", "--bidir", "--connect-timeout", "3000"]
    deadline = time.monotonic() + _CONNECT_RETRY_S
    while True:
        # A server that accepts and then stalls would hold iperf3 (and the play) forever.
        rc, out, err = run_command(argv, params["seconds"] + params["timeout_s"], environ_update={"LC_ALL": "C"})
        if rc == TIMED_OUT:
            return {"error": "{0}: the iperf3 server at {1} port {2} stopped answering".format(
                err, params["peer_address"], params["port"])}
        try:
            forward, reverse = iperf3_bidir_gbps(out)
            return {"gbps": min(forward, reverse), "forward_gbps": forward, "reverse_gbps": reverse, "error": ""}
        except ValueError as error:
            message = str(error)
        if "refused" not in message or time.monotonic() > deadline:
            return {"error": message if out.strip() else (err.strip()[:300] or message)}
        time.sleep(0.2)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            role=dict(type="str", choices=["server", "client"], required=True),
            address=dict(type="str", required=True),
            peer_address=dict(type="str", default=""),
            port=dict(type="int", required=True),
            seconds=dict(type="int", default=2),
            timeout_s=dict(type="int", default=30),
        ),
        required_if=[("role", "client", ["peer_address"])],
        supports_check_mode=True,
    )
    params = module.params
    if not 0 < params["port"] < 65536 or params["seconds"] < 1 or params["timeout_s"] < 1:
        module.fail_json(msg="port must be 1-65535 and seconds and timeout_s at least 1")
    for key in ("address", "peer_address"):
        if params[key] or key == "address":
            try:
                ipaddress.ip_address(params[key])
            except ValueError:
                module.fail_json(msg="{0} must be an IP address (the cluster address, ncclkit_cluster_ip), "
                                     "not {1!r}".format(key, params[key]))
    result = {"gbps": None, "forward_gbps": None, "reverse_gbps": None, "error": ""}
    if not module.check_mode and not module.get_bin_path("iperf3"):
        result["error"] = "iperf3 is not installed on this host (nccl_network installs it)"
    elif module.check_mode:
        result["error"] = "not run in check mode"
    elif params["role"] == "server":
        result.update(serve(module, params))
    else:
        result.update(measure(module, params))
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
