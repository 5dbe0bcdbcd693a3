"""Which RDMA ports (InfiniBand, RoCE, Alibaba eRDMA) NCCL's IB transport can use on a host.

The nccl_profile role lists /sys/class/infiniband/<device>/ports/<port> as lines of
`device|port|state|link_layer|driver` (RDMA_PORTS_SCRIPT) and passes them here.
"""

from __future__ import annotations

# Prints one line per RDMA port; nothing (and exit 0) on a host without any.
RDMA_PORTS_SCRIPT = (
    'for port in /sys/class/infiniband/*/ports/*; do [ -d "$port" ] || continue; '
    'dev=${port%/ports/*}; '
    'printf "%s|%s|%s|%s|%s\\n" "${dev##*/}" "${port##*/}" "$(cat "$port/state" 2>/dev/null)" '
    '"$(cat "$port/link_layer" 2>/dev/null)" "$(basename "$(readlink -f "$dev/device/driver")")"; '
    'done'
)
# AWS EFA shows up as an RDMA device but NCCL reaches it only through the aws-ofi-nccl plugin
# (NCCL_NET), never through its IB transport: it must not turn NCCL_IB_DISABLE off.
PLUGIN_ONLY_DRIVERS = ("efa",)


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


def usable_rdma_ports(lines) -> list:
    """`device:port` of each active port NCCL's IB transport can use."""
    return [f"{port['device']}:{port['port']}" for port in rdma_ports(lines) if port["usable"]]
