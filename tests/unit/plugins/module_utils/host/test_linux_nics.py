"""The rtnetlink NIC reader against iproute2's own answer, here and in a namespace made for it
(two addresses on one NIC, a jumbo MTU, a NIC that is down, a default route)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.host.nics import read_nics
from conftest import REPO_ROOT

needs_ip = pytest.mark.skipif(not shutil.which("ip"), reason="iproute2 is the reference here")


def nics_from_iproute2(netns: list[str] | None = None) -> list[dict]:
    """What `ip -json` says, in the shape of read_nics()."""
    prefix = netns or []
    links = json.loads(subprocess.run(prefix + ["ip", "-json", "-details", "-4", "address", "show"],
                                      check=True, capture_output=True, text=True).stdout)
    routes = json.loads(subprocess.run(prefix + ["ip", "-json", "-4", "route", "show", "default"],
                                       check=True, capture_output=True, text=True).stdout)
    default = {route["dev"] for route in routes if route.get("dst") == "default"}
    # `ip -4 address show` leaves out links without IPv4 addresses; read_nics lists them all.
    return [{"name": link["ifname"],
             "ipv4": [{"address": a["local"], "prefix": a["prefixlen"]}
                      for a in link.get("addr_info", []) if a.get("family") == "inet"],
             "mtu": link["mtu"], "max_mtu": link.get("max_mtu", 0),
             "up": "UP" in link["flags"], "loopback": "LOOPBACK" in link["flags"],
             "default_route": link["ifname"] in default} for link in links]


@needs_ip
def test_matches_iproute2_on_this_host():
    ours = {nic["name"]: nic for nic in read_nics()}
    for nic in nics_from_iproute2():
        assert ours[nic["name"]] == nic
    assert any(nic["loopback"] and nic["ipv4"] == [{"address": "127.0.0.1", "prefix": 8}]
               for nic in ours.values())


@pytest.fixture
def netns():
    if os.geteuid() != 0:
        pytest.skip("making a network namespace needs root")
    name = f"ncclkit-nicstest-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    ns = ["ip", "netns", "exec", name]
    try:
        for argv in (["ip", "link", "set", "lo", "up"],
                     ["ip", "link", "add", "eth1", "type", "veth", "peer", "name", "peer1"],
                     ["ip", "link", "set", "peer1", "up"],
                     ["ip", "link", "set", "eth1", "mtu", "9000", "up"],
                     ["ip", "addr", "add", "10.7.0.11/24", "dev", "eth1"],
                     ["ip", "addr", "add", "10.7.1.99/25", "dev", "eth1"],
                     ["ip", "link", "add", "eth2", "type", "veth", "peer", "name", "peer2"],
                     ["ip", "addr", "add", "192.0.2.5/32", "dev", "eth2"],
                     ["ip", "route", "add", "default", "dev", "eth1"]):
            subprocess.run(ns + argv, check=True)
        yield ns
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)


@needs_ip
def test_reads_a_namespace_with_several_addresses_mtu_down_nic_and_default_route(netns):
    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); "
            "from ansible_collections.ncclkit.cluster.plugins.module_utils.host.nics import read_nics; "
            "print(json.dumps(read_nics()))")
    out = subprocess.run(netns + [sys.executable, "-c", code, str(REPO_ROOT / "collections")],
                         check=True, capture_output=True, text=True).stdout
    ours = json.loads(out)
    reference = nics_from_iproute2(netns)
    assert [nic for nic in ours if nic["ipv4"]] == reference
    assert {nic["name"] for nic in ours} == {"lo", "eth1", "peer1", "eth2", "peer2"}
    by_name = {nic["name"]: nic for nic in ours}
    assert by_name["eth1"] == {"name": "eth1", "mtu": 9000, "max_mtu": 65535, "up": True, "loopback": False,
                               "default_route": True,
                               "ipv4": [{"address": "10.7.0.11", "prefix": 24},
                                        {"address": "10.7.1.99", "prefix": 25}]}
    assert by_name["eth2"]["up"] is False and by_name["eth2"]["ipv4"] == [
        {"address": "192.0.2.5", "prefix": 32}]
    assert not by_name["lo"]["default_route"]
