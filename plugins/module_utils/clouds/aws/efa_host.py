"""AWS EFA on one host: which devices, whether the EFA software and aws-ofi-nccl are there, and
the NCCL values that make NCCL use them (or fail, never fall back to sockets in silence).

Pure Python; the nccl_efa module gathers the inputs on the host.
"""

from __future__ import annotations

import os
import re

from ansible_collections.ncclkit.cluster.plugins.module_utils.clouds.aws.efa_installer import published_range
from ansible_collections.ncclkit.cluster.plugins.module_utils.common.nccl_plugins import short_plugin_name
from ansible_collections.ncclkit.cluster.plugins.module_utils.host.rdma import rdma_ports

EFA_DRIVER = "efa"
# aws-ofi-nccl's plugin name: "AWS Libfabric" up to 1.12; from 1.13 "Libfabric", which still
# accepts "AWS Libfabric" (and "OFI"). So "AWS Libfabric" is the value every version takes.
NCCL_NET_EVERY_VERSION = "AWS Libfabric"
# The library, by aws-ofi-nccl version: libnccl-net-ofi.so from 1.13, libnccl-net.so before.
PLUGIN_LIBRARIES = ("libnccl-net-ofi.so", "libnccl-net.so")
# Where the library lies: the RPM's and the EFA installer's prefix (lib, lib64), the Debian
# package's multiarch folders (aws-ofi-nccl up to 1.16.x), NGC containers' build, a source build.
PLUGIN_DIRS = ("/opt/amazon/ofi-nccl/lib", "/opt/amazon/ofi-nccl/lib64",
               "/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu", "/opt/amazon/ofi-nccl/lib/aarch64-linux-gnu",
               "/opt/amazon/aws-ofi-nccl/lib", "/opt/aws-ofi-nccl/lib")
# The package that owns the plugin where the EFA installer put it (same name in its RPMs and DEBs).
PLUGIN_PACKAGE = "libnccl-ofi"
# NCCL_NET_PLUGIN: NCCL up to 2.20 loads libnccl-net-<value>.so; from 2.21 it first tries the value
# as a file name (a full path), then libnccl-net-<value>.so (src/net.cc by tag).
PLUGIN_PATH_SINCE = (2, 21)
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


def owned_files(text: str) -> list:
    """The files `dpkg-query -L` or `rpm -ql` lists for the plugin package (absolute paths only)."""
    return [line.strip() for line in (text or "").splitlines() if line.strip().startswith("/")]


def find_plugin(dirs=PLUGIN_DIRS, owned=(), root="") -> str:
    """The aws-ofi-nccl library: among the package's own files first, then in the known folders.

    root: a prefix for the tests' fake layouts ("" on a host)."""
    files = [path for path in owned if os.path.basename(path) in PLUGIN_LIBRARIES]
    files += [os.path.join(folder, name) for folder in dirs for name in PLUGIN_LIBRARIES]
    return plugin_path([path for path in files if os.path.isfile(root + path)])


def plugin_path(existing_files) -> str:
    """The aws-ofi-nccl library among the files found, newest name first ("" when none)."""
    for name in PLUGIN_LIBRARIES:
        for path in existing_files:
            if path.endswith("/" + name):
                return path
    return ""


def _version(text):
    match = re.match(r"\s*(\d+)\.(\d+)", str(text or ""))
    return (int(match.group(1)), int(match.group(2))) if match else None


def plugin_setting(plugin: str, nccl_versions) -> str:
    """NCCL_NET_PLUGIN's value for every NCCL the jobs load ("" to leave it unset).

    The full path only when every NCCL is known and 2.21 or later. Otherwise what NCCL up to 2.20
    also loads: the short name of libnccl-net-<name>.so ("ofi"), or nothing for libnccl-net.so (the
    name NCCL tries when the variable is unset). Both are looked up by the dynamic loader, so the
    plugin's folder must be in its path (the EFA installer's ld.so.conf entry, or LD_LIBRARY_PATH)."""
    versions = [_version(text) for text in nccl_versions or ()]
    if versions and all(version and version >= PLUGIN_PATH_SINCE for version in versions):
        return plugin
    return short_plugin_name(plugin)


def efa_env(cloud_env: dict, plugin: str, nccl_versions=()) -> dict:
    """ncclkit_cloud_nccl_env with NCCL pinned to aws-ofi-nccl: NCCL_NET makes a missing plugin an
    error; NCCL_NET_PLUGIN as plugin_setting chooses it for the NCCL versions the jobs load."""
    env = {name: value for name, value in (cloud_env or {}).items()
           if name not in NOT_OURS and name != "NCCL_NET_PLUGIN"}
    env["NCCL_NET"] = NCCL_NET_EVERY_VERSION
    setting = plugin_setting(plugin, nccl_versions)
    if setting:
        env["NCCL_NET_PLUGIN"] = setting
    return env


def install_blocker(efa: dict, sha256: str, version: str) -> str:
    """Why the EFA installer cannot run here, with what to do ("" when it can, or need not).
    `sha256` is the resolved one (efa_installer.installer_sha256).

    EFA devices listed means the kernel's efa driver is loaded: only user space (libfabric's efa
    provider, aws-ofi-nccl) is missing, and the line names which."""
    if not efa.get("count") or efa.get("installed") or re.fullmatch(r"[0-9a-fA-F]{64}", sha256 or ""):
        return ""
    missing = []
    if not efa.get("fi_info_ok"):
        missing.append(f"libfabric's efa provider ({efa.get('fi_info_error') or 'no fi_info'})")
    if not efa.get("plugin"):
        missing.append(f"aws-ofi-nccl (package {PLUGIN_PACKAGE}; looked in its file list and {', '.join(PLUGIN_DIRS)})")
    return (f"the kernel's efa driver is loaded ({', '.join(efa.get('devices') or [])}) but {' and '.join(missing)} "
            f"{'are' if len(missing) > 1 else 'is'} missing, and there is no checksum to check installer {version} against "
            f"(cloud_aws_efa_installer_sha256 is not set, and this collection carries AWS's published ones for "
            f"{published_range()} only): set cloud_aws_efa_installer_sha256 to the sha256 of aws-efa-installer-{version}.tar.gz "
            "as AWS publishes it (docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-verify.html) to install the user space "
            "with AWS's installer, or install those parts yourself and set cloud_aws_efa_install to false")


def container_env(env: dict) -> dict:
    """The EFA values as a container on this host takes them: a host path in NCCL_NET_PLUGIN does
    not exist inside an NGC image (its plugin is under /opt/amazon/aws-ofi-nccl/lib), so it becomes
    the short name the image's loader path resolves (or is dropped for libnccl-net.so)."""
    found = dict(env or {})
    value = found.get("NCCL_NET_PLUGIN", "")
    if value.startswith("/"):
        short = plugin_setting(value, ())
        if short:
            found["NCCL_NET_PLUGIN"] = short
        else:
            del found["NCCL_NET_PLUGIN"]
    return found


# Kernel modules that give EFA GPUDirect RDMA: efa_nv_peermem (the EFA driver's peer-memory
# client); nvidia_peermem is the InfiniBand path and proves nothing for EFA. Without either, the
# EFA driver can still use dma-buf (kernel and driver permitting): the plugin's log says which.
EFA_GDR_MODULES = ("efa_nv_peermem",)


def efa_gdr_module(proc_modules: str) -> str:
    """The loaded module that gives EFA GPUDirect RDMA ("" when none: dma-buf or no GDR)."""
    loaded = {line.split()[0] for line in (proc_modules or "").splitlines() if line.strip()}
    return next((name for name in EFA_GDR_MODULES if name in loaded), "")
