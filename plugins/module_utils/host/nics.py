"""Read a Linux host's NICs from the kernel over rtnetlink: names, IPv4 addresses, MTU, flags and
which one holds the default route.

Pure Python (stdlib only), so that it works where iproute2 is missing, as in many GPU container
images (AutoDL's among them). The result is what the nccl_preflight_nics fact holds:
[{name, ipv4: [{address, prefix}], mtu, up, loopback, default_route}], in interface-index order.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import struct

NETLINK_ROUTE = 0
RTM_GETLINK, RTM_GETADDR, RTM_GETROUTE = 18, 22, 26
RTM_NEWLINK, RTM_NEWADDR, RTM_NEWROUTE = 16, 20, 24
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
IFLA_IFNAME, IFLA_MTU = 3, 4
IFLA_MIN_MTU, IFLA_MAX_MTU = 50, 51   # Linux 4.10 and later
IFA_ADDRESS, IFA_LOCAL = 1, 2
RTA_DST, RTA_OIF = 1, 4
RT_TABLE_MAIN = 254
IFF_UP, IFF_LOOPBACK = 0x1, 0x8

_NLMSGHDR = struct.Struct("=IHHII")      # len, type, flags, seq, pid
_IFINFOMSG = struct.Struct("=BxHiII")    # family, type, index, flags, change
_IFADDRMSG = struct.Struct("=BBBBI")     # family, prefixlen, flags, scope, index
_RTMSG = struct.Struct("=BBBBBBBBI")     # family, dst_len, src_len, tos, table, proto, scope, type, flags
_RTATTR = struct.Struct("=HH")           # len, type


class NicReadError(RuntimeError):
    """The kernel could not be asked (no netlink socket, or it answered with an error)."""


def _align(length: int) -> int:
    return (length + 3) & ~3


def _attributes(data: bytes, offset: int) -> dict[int, bytes]:
    found = {}
    while offset + _RTATTR.size <= len(data):
        length, kind = _RTATTR.unpack_from(data, offset)
        if length < _RTATTR.size:
            break
        found.setdefault(kind, data[offset + _RTATTR.size: offset + length])
        offset += _align(length)
    return found


def _dump(sock: socket.socket, msg_type: int, body: bytes, seq: int) -> list[tuple[int, bytes]]:
    """Send one dump request; return (message type, payload) of every answer."""
    header = _NLMSGHDR.pack(_NLMSGHDR.size + len(body), msg_type, NLM_F_REQUEST | NLM_F_DUMP, seq, 0)
    sock.send(header + body)
    answers = []
    while True:
        data = sock.recv(1 << 16)
        offset = 0
        while offset + _NLMSGHDR.size <= len(data):
            length, kind, _flags, _seq, _pid = _NLMSGHDR.unpack_from(data, offset)
            if length < _NLMSGHDR.size:
                raise NicReadError("the kernel sent a malformed netlink message")
            payload = data[offset + _NLMSGHDR.size: offset + length]
            if kind == NLMSG_DONE:
                return answers
            if kind == NLMSG_ERROR:
                errno = -struct.unpack_from("=i", payload)[0]
                if errno:
                    raise NicReadError(f"the kernel refused the netlink request: {os.strerror(errno)}")
            else:
                answers.append((kind, payload))
            offset += _align(length)


def _links(sock: socket.socket) -> dict[int, dict]:
    links = {}
    for kind, payload in _dump(sock, RTM_GETLINK, _IFINFOMSG.pack(socket.AF_UNSPEC, 0, 0, 0, 0), 1):
        if kind != RTM_NEWLINK:
            continue
        _family, _type, index, flags, _change = _IFINFOMSG.unpack_from(payload)
        attrs = _attributes(payload, _IFINFOMSG.size)
        name = attrs.get(IFLA_IFNAME, b"").split(b"\0", 1)[0].decode(errors="replace")
        mtu = struct.unpack("=I", attrs[IFLA_MTU])[0] if len(attrs.get(IFLA_MTU, b"")) == 4 else 0
        # 0 where the kernel does not say (older kernels, or no limit reported).
        max_mtu = struct.unpack("=I", attrs[IFLA_MAX_MTU])[0] if len(attrs.get(IFLA_MAX_MTU, b"")) == 4 else 0
        links[index] = {"name": name, "ipv4": [], "mtu": mtu, "max_mtu": max_mtu, "up": bool(flags & IFF_UP),
                        "loopback": bool(flags & IFF_LOOPBACK), "default_route": False}
    return links


def _add_ipv4_addresses(sock: socket.socket, links: dict[int, dict]) -> None:
    for kind, payload in _dump(sock, RTM_GETADDR, _IFADDRMSG.pack(socket.AF_INET, 0, 0, 0, 0), 2):
        family, prefix, _flags, _scope, index = _IFADDRMSG.unpack_from(payload)
        if kind != RTM_NEWADDR or family != socket.AF_INET or index not in links:
            continue
        attrs = _attributes(payload, _IFADDRMSG.size)
        raw = attrs.get(IFA_LOCAL) or attrs.get(IFA_ADDRESS)
        if raw and len(raw) == 4:
            links[index]["ipv4"].append({"address": str(ipaddress.IPv4Address(raw)), "prefix": prefix})


def _mark_default_routes(sock: socket.socket, links: dict[int, dict]) -> None:
    body = _RTMSG.pack(socket.AF_INET, 0, 0, 0, 0, 0, 0, 0, 0)
    for kind, payload in _dump(sock, RTM_GETROUTE, body, 3):
        fields = _RTMSG.unpack_from(payload)
        dst_len, table = fields[1], fields[4]
        if kind != RTM_NEWROUTE or dst_len != 0 or table != RT_TABLE_MAIN:
            continue
        attrs = _attributes(payload, _RTMSG.size)
        if RTA_DST in attrs or len(attrs.get(RTA_OIF, b"")) != 4:
            continue
        index = struct.unpack("=I", attrs[RTA_OIF])[0]
        if index in links:
            links[index]["default_route"] = True


def netlink_socket(purpose: str) -> socket.socket:
    """A bound rtnetlink socket; NicReadError naming `purpose` where there is none (not Linux)."""
    try:
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_ROUTE)
    except (OSError, AttributeError) as error:
        raise NicReadError(f"cannot open a netlink socket to {purpose}: {error}") from error
    sock.bind((0, 0))
    return sock


def read_nics() -> list[dict]:
    """This network namespace's NICs, as the nccl_preflight_nics fact holds them."""
    with netlink_socket("read the NICs") as sock:
        links = _links(sock)
        _add_ipv4_addresses(sock, links)
        _mark_default_routes(sock, links)
    return [links[index] for index in sorted(links)]
