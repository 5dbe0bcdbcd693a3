# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Which NIC the kernel sends a packet to an address through: `ip route get` without iproute2.

Pure Python (stdlib only), over rtnetlink as host.nics reads the NICs: many GPU images have no
`ip` command. One RTM_GETROUTE request (not a dump) makes the kernel resolve the route exactly as
it would for a packet, policy rules and source address included, and name the output interface.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
import struct
from typing import Optional

from .nics import (
    _NLMSGHDR,
    _RTMSG,
    NLM_F_REQUEST,
    NLMSG_ERROR,
    RTA_DST,
    RTA_OIF,
    RTM_GETROUTE,
    RTM_NEWROUTE,
    NicReadError,
    _align,
    netlink_socket,
    _attributes,
)

RTA_SRC = 2
_RTATTR = struct.Struct("=HH")


class RouteError(RuntimeError):
    """The kernel has no route (the message is its reason, as `ip route get` prints it)."""


def _attribute(kind: int, value: bytes) -> bytes:
    length = _RTATTR.size + len(value)
    return _RTATTR.pack(length, kind) + value + b"\0" * (_align(length) - length)


def route_request(destination: str, source: Optional[str] = None, seq: int = 1) -> bytes:
    """The netlink message that asks for the route to `destination` (from `source`)."""
    dst = ipaddress.IPv4Address(destination).packed
    body = _RTMSG.pack(socket.AF_INET, 32, 32 if source else 0, 0, 0, 0, 0, 0, 0) + _attribute(RTA_DST, dst)
    if source:
        body += _attribute(RTA_SRC, ipaddress.IPv4Address(source).packed)
    return _NLMSGHDR.pack(_NLMSGHDR.size + len(body), RTM_GETROUTE, NLM_F_REQUEST, seq, 0) + body


def parse_route_answer(data: bytes) -> int:
    """The output interface index in the kernel's answer; RouteError when it has no route."""
    offset = 0
    while offset + _NLMSGHDR.size <= len(data):
        length, kind, _flags, _seq, _pid = _NLMSGHDR.unpack_from(data, offset)
        if length < _NLMSGHDR.size:
            break
        payload = data[offset + _NLMSGHDR.size: offset + length]
        if kind == NLMSG_ERROR:
            code = -struct.unpack_from("=i", payload)[0]
            if code:
                raise RouteError(os.strerror(code))
        elif kind == RTM_NEWROUTE:
            oif = _attributes(payload, _RTMSG.size).get(RTA_OIF, b"")
            if len(oif) == 4:
                return struct.unpack("=I", oif)[0]
            raise RouteError("the kernel's route names no output interface")
        offset += _align(length)
    raise NicReadError("the kernel sent no route message")


def route_dev(destination: str, source: Optional[str] = None) -> str:
    """The name of the NIC the kernel routes `destination` through (from `source`, a local address).

    RouteError when there is no route, NicReadError when netlink cannot be asked."""
    with netlink_socket("look up routes") as sock:
        sock.settimeout(5)
        sock.send(route_request(destination, source))
        try:
            index = parse_route_answer(sock.recv(1 << 16))
        except socket.timeout as error:
            raise NicReadError("the kernel did not answer the route request") from error
    try:
        return socket.if_indextoname(index)
    except OSError as error:
        if error.errno == errno.ENXIO:
            raise RouteError(f"the route leaves through interface {index}, which no longer exists") from error
        raise
