"""Which RDMA ports (InfiniBand, RoCE, Alibaba eRDMA) NCCL's IB transport can use on a host.

nccl_preflight lists /sys/class/infiniband/<device>/ports/<port> as lines of
`device|port|state|link_layer|driver|rate` (read_port_lines, the nccl_preflight_rdma_ports fact;
the rate as sysfs says it, "400 Gb/sec (4X NDR)", read by nccl_validate's busbw gate); the other
functions read those lines (lines of the first five fields only, from older runs, too).
"""

from __future__ import annotations

import glob
import os

# AWS EFA shows up as an RDMA device but NCCL reaches it only through the aws-ofi-nccl plugin
# (NCCL_NET), never through its IB transport: it must not turn NCCL_IB_DISABLE off.
PLUGIN_ONLY_DRIVERS = ("efa",)


def _first_line(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.readline().strip()
    except OSError:
        return ""


def read_port_lines(sysfs: str = "/sys") -> list:
    """Every RDMA port the kernel lists, as `device|port|state|link_layer|driver|rate` lines.

    The driver is the name of the device's bound PCI driver (efa, erdma, mlx5_core, ...): device
    names alone do not tell eRDMA's compat mode (rocep*) from RoCE."""
    lines = []
    for port in sorted(glob.glob(os.path.join(sysfs, "class", "infiniband", "*", "ports", "*"))):
        if not os.path.isdir(port):
            continue
        device = os.path.dirname(os.path.dirname(port))
        link = os.path.join(device, "device", "driver")
        driver = os.path.basename(os.path.realpath(link)) if os.path.exists(link) else ""
        lines.append("|".join((os.path.basename(device), os.path.basename(port),
                               _first_line(os.path.join(port, "state")),
                               _first_line(os.path.join(port, "link_layer")), driver,
                               _first_line(os.path.join(port, "rate")))))
    return lines


def rdma_ports(lines) -> list:
    """Every port listed: {device, port, state, link_layer, driver, active, usable}."""
    ports = []
    for line in lines or []:
        if not line.strip():
            continue
        fields = (line.split("|") + [""] * 5)[:5]
        device, port, state, link_layer, driver = (field.strip() for field in fields)
        active = state.upper().endswith("ACTIVE")
        ports.append({
            "device": device,
            "port": port,
            "state": state,
            "link_layer": link_layer,
            "driver": driver,
            "active": active,
            "usable": active and driver not in PLUGIN_ONLY_DRIVERS,
        })
    return ports


# Alibaba Cloud's elastic RDMA. In its compat mode the devices are named rocep*, not erdma_*:
# only the driver tells them apart from RoCE.
ERDMA_DRIVER = "erdma"
# NCCL's IB transport runs on eRDMA from 2.19; before 2.21 it needs the GID index named.
ERDMA_MIN_NCCL = (2, 19)
ERDMA_GID_INDEX_BEFORE = (2, 21)


def erdma_devices(lines) -> list:
    """The devices with an active eRDMA port, by driver, sorted."""
    return sorted({port["device"] for port in rdma_ports(lines) if port["usable"] and port["driver"] == ERDMA_DRIVER})


def rdma_transport(lines) -> str:
    """What NCCL should use between hosts by the devices found: efa, erdma, ib or socket."""
    ports = [port for port in rdma_ports(lines) if port["active"]]
    drivers = {port["driver"] for port in ports}
    if "efa" in drivers:
        return "efa"
    if ERDMA_DRIVER in drivers:
        return "erdma"
    return "ib" if ports else "socket"


def usable_rdma_ports(lines) -> list:
    """`device:port` of each active port NCCL's IB transport can use."""
    return [f"{port['device']}:{port['port']}" for port in rdma_ports(lines) if port["usable"]]


def rdma_disagreement(ports_by_host: dict) -> str:
    """Under nccl_profile_rdma auto, why the hosts' decisions differ; "" when they agree.

    One host with a dead port would get NCCL_IB_DISABLE=1 and the others 0: a job across them
    then mixes transports, which NCCL does not do.
    """
    with_rdma = [host for host, ports in ports_by_host.items() if ports]
    without = [host for host, ports in ports_by_host.items() if not ports]
    if not with_rdma or not without:
        return ""
    listed = ", ".join(f"{host} ({', '.join(ports_by_host[host])})" for host in with_rdma)
    return (f"nccl_profile_rdma is auto and the hosts differ: {listed} "
            f"{'has' if len(with_rdma) == 1 else 'have'} an active RDMA port NCCL can use, "
            f"{', '.join(without)} {'has' if len(without) == 1 else 'have'} none, so NCCL would use "
            "RDMA on some hosts and sockets on the others. Bring the ports up on "
            f"{', '.join(without)} (ibv_devinfo), or set nccl_profile_rdma to disabled (sockets on "
            "every host) or required (fail on every host without RDMA)")
