"""The route lookup over rtnetlink that replaces `ip route get`: the request's bytes, the kernel's
answers (a route, an error), and the real kernel of this machine."""

import shutil
import socket
import struct
import subprocess

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.host.routes import (
    RouteError,
    parse_route_answer,
    route_dev,
    route_request,
)

NLMSG = struct.Struct("=IHHII")
RTMSG = struct.Struct("=BBBBBBBBI")


def message(kind, payload):
    return NLMSG.pack(NLMSG.size + len(payload), kind, 0, 1, 0) + payload


def test_the_request_asks_for_one_route_from_the_source():
    data = route_request("10.0.0.12", "10.0.0.11")
    length, kind, flags, dummy, dummy = NLMSG.unpack_from(data)
    assert (length, kind, flags) == (len(data), 26, 1)           # RTM_GETROUTE, NLM_F_REQUEST, no dump
    family, dst_len, src_len = RTMSG.unpack_from(data, NLMSG.size)[:3]
    assert (family, dst_len, src_len) == (socket.AF_INET, 32, 32)
    attrs = data[NLMSG.size + RTMSG.size:]
    assert attrs == struct.pack("=HH", 8, 1) + bytes([10, 0, 0, 12]) + struct.pack("=HH", 8, 2) + bytes([10, 0, 0, 11])
    assert RTMSG.unpack_from(route_request("10.0.0.12"), NLMSG.size)[2] == 0


def test_the_answer_names_the_output_interface_or_the_kernels_reason():
    route = RTMSG.pack(socket.AF_INET, 32, 0, 0, 254, 0, 0, 1, 0) + struct.pack("=HHI", 8, 4, 3)
    assert parse_route_answer(message(24, route)) == 3
    with pytest.raises(RouteError, match="Network is unreachable"):
        parse_route_answer(message(2, struct.pack("=i", -101) + b"\0" * 16))
    with pytest.raises(RouteError, match="no output interface"):
        parse_route_answer(message(24, RTMSG.pack(socket.AF_INET, 32, 0, 0, 254, 0, 0, 1, 0)))


def test_the_kernel_routes_loopback_through_lo_and_refuses_a_foreign_source():
    assert route_dev("127.0.0.1") == "lo"
    assert route_dev("127.0.0.2", "127.0.0.1") == "lo"
    with pytest.raises(RouteError):
        route_dev("192.0.2.55", "203.0.113.200")   # not an address of this host


@pytest.mark.skipif(not shutil.which("ip"), reason="no iproute2 to compare with")
def test_it_agrees_with_ip_route_get():
    words = subprocess.run(["ip", "-o", "-4", "route", "get", "192.0.2.77"], capture_output=True, text=True,
                           check=False).stdout.split()
    if "dev" not in words:
        pytest.skip("this machine has no IPv4 route to a documentation address")
    assert route_dev("192.0.2.77") == words[words.index("dev") + 1]
