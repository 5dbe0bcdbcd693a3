"""AWS EFA on one host: which devices, whether the EFA software and aws-ofi-nccl are there, and
the NCCL values that make NCCL use them (or fail, never fall back to sockets in silence).

Pure Python; the nccl_efa module gathers the inputs on the host.
"""

from __future__ import annotations

import re

from ansible_collections.ncclkit.cluster.plugins.module_utils.host.rdma import rdma_ports

EFA_DRIVER = "efa"
# aws-ofi-nccl's plugin name: "AWS Libfabric" up to 1.12; from 1.13 "Libfabric", which still
# accepts "AWS Libfabric" (and "OFI"). So "AWS Libfabric" is the value every version takes.
NCCL_NET_EVERY_VERSION = "AWS Libfabric"
# The library, by aws-ofi-nccl version: libnccl-net-ofi.so from 1.13, libnccl-net.so before.
PLUGIN_LIBRARIES = ("libnccl-net-ofi.so", "libnccl-net.so")
# What the plugin tunes per instance type, and the socket tuning meant for TCP clusters: never set here.
NOT_OURS = ("FI_PROVIDER", "FI_EFA_USE_DEVICE_RDMA", "FI_EFA_FORK_SAFE", "NCCL_PROTO", "NCCL_BUFFSIZE",
            "NCCL_SOCKET_NTHREADS", "NCCL_NSOCKS_PERTHREAD", "NCCL_IB_DISABLE")


def efa_devices(lines) -> list:
    """EFA devices (sysfs driver efa), whatever the state of their ports."""
    return sorted({port["device"] for port in rdma_ports(lines) if port["driver"] == EFA_DRIVER})


def fi_info_version(text: str) -> str:
    """The efa provider's version from `fi_info -p efa -t FI_EP_RDM` ("" when efa is not listed)."""
    blocks = re.split(r"^provider:\s*", text or "", flags=re.MULTILINE)[1:]
    for block in blocks:
        if block.split("\n", 1)[0].strip() == "efa":
            match = re.search(r"^\s*version:\s*(\S+)", block, re.MULTILINE)
            return match.group(1) if match else "?"
    return ""


def plugin_path(existing_files) -> str:
    """The aws-ofi-nccl library among the files found, newest name first ("" when none)."""
    for name in PLUGIN_LIBRARIES:
        for path in existing_files:
            if path.endswith("/" + name):
                return path
    return ""


def efa_env(cloud_env: dict, plugin: str) -> dict:
    """ncclkit_cloud_nccl_env with NCCL pinned to aws-ofi-nccl: NCCL_NET makes a missing plugin an
    error, NCCL_NET_PLUGIN names the library by path (NCCL 2.21 and later accept one)."""
    env = {name: value for name, value in (cloud_env or {}).items() if name not in NOT_OURS}
    env["NCCL_NET"] = NCCL_NET_EVERY_VERSION
    env["NCCL_NET_PLUGIN"] = plugin
    return env
