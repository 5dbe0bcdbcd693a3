"""What a container allows a host to change, and what NCCL needs from it (fact `ncclkit_container`).

GPU clouds such as AutoDL rent containers, not machines: PID 1 is not systemd, /proc/sys is
read-only, the processes lack CAP_NET_ADMIN (no firewall), and /dev/shm is small. Every role
reads these facts and adapts (no sysctl pin, no firewall, no systemd unit) instead of failing
half-way; each adaptation is one line in `adaptations`.

Pure Python (stdlib only); every path is a parameter so that tests use fake trees.
"""

from __future__ import annotations

import ctypes
import os
import re
import shlex
from urllib.parse import urlsplit

CAP_NET_ADMIN = 12          # linux/capability.h
MIB = 1024 * 1024
PORT_RANGE_KEY = "net/ipv4/ip_local_port_range"

# NCCL's SHM transport gives each connection between two local ranks the buffers of all three
# protocols (src/include/device.h, NCCL 2.18-2.28): Simple 4 MiB (NCCL_BUFFSIZE),
# LL128 120*640*8*8 B = 4.69 MiB, LL 8*512*8*16 B = 0.5 MiB: 9.2 MiB, rounded up to 10 MiB.
# A rank keeps a send and a receive connection per channel; 4 channels is a low count for the
# SHM path. So each local GPU needs about 4 * 2 * 10 MiB of /dev/shm.
SHM_PER_CONNECTION = 10 * MIB
SHM_CHANNELS = 4
SHM_PER_GPU = SHM_CHANNELS * 2 * SHM_PER_CONNECTION
# NVIDIA's advice for containers running NCCL (docker run --shm-size=1g).
SHM_ADVISED = 1024 * MIB

# What /etc/network_turbo may set: AutoDL's file is `export http_proxy=... && export https_proxy=...`.
PROXY_NAMES = ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")
_NO_PROXY_VALUE = re.compile(r"^[A-Za-z0-9.,:*/_-]*$")


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as stream:
            return stream.read()
    except OSError:
        return None


def pid1_name(proc_root: str = "/proc") -> str:
    """The command name of PID 1 as this host's processes see it ("" when unreadable)."""
    return (_read(os.path.join(proc_root, "1", "comm")) or "").strip()


def boots_with_systemd(pid1: str, root: str = "/") -> bool:
    """Whether a systemd unit written now would ever run: systemd is PID 1 now (sd_booted's
    /run/systemd/system), or the image's /sbin/init is systemd (a VM or a chroot that boots it)."""
    if pid1 == "systemd" or os.path.isdir(os.path.join(root, "run/systemd/system")):
        return True
    init = os.path.join(root, "sbin/init")
    return os.path.exists(init) and os.path.basename(os.path.realpath(init)) == "systemd"


def proc_sys_writable(proc_root: str = "/proc") -> bool:
    """Open the port-range sysctl for writing without writing: a read-only /proc/sys (EROFS) or a
    namespace that may not change it (EPERM, EACCES) says no. Nothing is changed."""
    try:
        descriptor = os.open(os.path.join(proc_root, "sys", PORT_RANGE_KEY), os.O_WRONLY)
    except OSError:
        return False
    os.close(descriptor)
    return True


def effective_capabilities(proc_root: str = "/proc") -> int | None:
    """CapEff of this process as an integer, or None when /proc does not say."""
    status = _read(os.path.join(proc_root, "self", "status")) or ""
    match = re.search(r"^CapEff:\s*([0-9a-fA-F]+)\s*$", status, re.MULTILINE)
    return int(match.group(1), 16) if match else None


def has_net_admin(proc_root: str = "/proc") -> bool:
    capabilities = effective_capabilities(proc_root)
    return capabilities is not None and bool(capabilities >> CAP_NET_ADMIN & 1)


def port_range(proc_root: str = "/proc") -> list:
    """net.ipv4.ip_local_port_range as it is now: [low, high], or [] when unreadable."""
    fields = (_read(os.path.join(proc_root, "sys", PORT_RANGE_KEY)) or "").split()
    if len(fields) == 2 and all(field.isdigit() for field in fields):
        return [int(fields[0]), int(fields[1])]
    return []


def shm_bytes(path: str = "/dev/shm") -> int | None:
    try:
        stats = os.statvfs(path)
    except OSError:
        return None
    return stats.f_blocks * stats.f_frsize


def shm_required_bytes(gpu_count: int) -> int:
    """/dev/shm NCCL's SHM transport needs for `gpu_count` local GPUs (0 with fewer than two:
    a single local rank has no SHM peer, and GPUs on other hosts are reached over the network)."""
    return 0 if gpu_count < 2 else gpu_count * SHM_PER_GPU


# cuMem host memory carries NCCL's SHM transport instead of /dev/shm from NCCL 2.24 on, where the
# CUDA driver is 12.6 or later, unless NCCL_CUMEM_ENABLE or NCCL_CUMEM_HOST_ENABLE is 0
# (src/misc/cudawrap.cc: ncclCuMemHostEnable is on by default for cudaDriverVersion >= 12060;
# src/transport/shm.cc takes ncclCuMemHostAlloc then). NCCL's proxy and DataLoader workers still
# use /dev/shm, so a small one stays a warning there.
CUMEM_HOST_NCCL = (2, 24)
CUMEM_HOST_DRIVER = (12, 6)
CUMEM_SWITCHES = ("NCCL_CUMEM_ENABLE", "NCCL_CUMEM_HOST_ENABLE")


def read_cuda_driver_version(library: str = "libcuda.so.1") -> str:
    """The CUDA driver API version ("12.6") from cuDriverGetVersion, which needs no cuInit and no
    GPU context; "" without a driver library."""
    try:
        cuda = ctypes.CDLL(library)
        version = ctypes.c_int(0)
        if cuda.cuDriverGetVersion(ctypes.byref(version)) != 0 or version.value <= 0:
            return ""
    except (OSError, AttributeError):
        return ""
    return f"{version.value // 1000}.{version.value % 1000 // 10}"


def nccl_conf_settings(text: str | None) -> dict:
    """NAME=value lines of an /etc/nccl.conf (comments and blank lines skipped)."""
    found = {}
    for line in (text or "").splitlines():
        name, equals, value = line.strip().partition("=")
        if equals and name and not name.startswith("#"):
            found[name.strip()] = value.strip()
    return found


def _major_minor(text) -> tuple | None:
    match = re.match(r"\s*(\d+)\.(\d+)", str(text or ""))
    return (int(match.group(1)), int(match.group(2))) if match else None


def shm_cumem_host(nccl_version: str, cuda_driver_version: str, settings: dict) -> bool:
    """Whether NCCL's SHM transport uses cuMem host memory instead of /dev/shm: NCCL 2.24 or later,
    CUDA driver 12.6 or later, and neither NCCL_CUMEM_ENABLE nor NCCL_CUMEM_HOST_ENABLE is 0.
    An unknown version counts as not."""
    nccl, driver = _major_minor(nccl_version), _major_minor(cuda_driver_version)
    if nccl is None or driver is None or nccl < CUMEM_HOST_NCCL or driver < CUMEM_HOST_DRIVER:
        return False
    return all(str((settings or {}).get(name, "")).strip() != "0" for name in CUMEM_SWITCHES)


def add_cumem_facts(facts: dict, nccl_version: str, cuda_driver_version: str, settings: dict) -> dict:
    """ncclkit_container with `cuda_driver_version` and `shm_cumem` added, and its adaptations again."""
    facts["cuda_driver_version"] = cuda_driver_version or ""
    facts["shm_cumem"] = shm_cumem_host(nccl_version, cuda_driver_version, settings)
    facts["adaptations"] = adaptations(facts)
    return facts


def parse_network_turbo(text: str) -> tuple[dict, list]:
    """The proxy variables an AutoDL /etc/network_turbo exports, read without running it.

    Returns ({name: value}, [problems]). Only http(s)_proxy and no_proxy are taken; a proxy URL
    must be http(s)://host[:port] without credentials (a value with credentials would land in
    facts and logs, so it is left out and named in the problems).
    """
    env, problems = {}, []
    try:
        words = shlex.split(text, comments=True)
    except ValueError as error:
        return {}, [f"cannot read it as shell words ({error})"]
    for word in words:
        if word in ("export", "&&", ";") or "=" not in word:
            continue
        name, value = word.split("=", 1)
        name = name.rstrip(";&")
        value = value.rstrip(";&")
        if name not in PROXY_NAMES:
            continue
        if name.lower() == "no_proxy":
            if _NO_PROXY_VALUE.match(value):
                env[name] = value
            else:
                problems.append(f"{name} has characters a host list does not")
            continue
        try:
            parts = urlsplit(value)
            hostname = parts.hostname
        except ValueError:  # "http://[" : an IPv6 bracket left open
            parts, hostname = None, None
        if parts is None or parts.scheme not in ("http", "https") or not hostname:
            problems.append(f"{name} is not an http(s) URL")
        elif parts.username or parts.password:
            problems.append(f"{name} carries credentials: left out (set the proxy yourself)")
        else:
            env[name] = value
    return env, problems


def adaptations(facts: dict) -> list:
    """One line per thing the roles do differently on this host, for the summary and the report."""
    lines = []
    if not facts["systemd"]:
        lines.append(f"PID 1 is {facts['pid1'] or 'unknown'}, not systemd, and the image does not "
                     "boot systemd: no systemd units are written (firewall rules are not restored "
                     "at boot)")
    if not facts["proc_sys_writable"]:
        low_high = "-".join(str(port) for port in facts["ip_local_port_range"]) or "unreadable"
        lines.append(f"/proc/sys is read-only: ip_local_port_range is not pinned; its current "
                     f"range {low_high} is used for the firewall, the probes and the cloud rules")
    if not facts["net_admin"]:
        lines.append("no CAP_NET_ADMIN: no host firewall is possible here, so none is configured "
                     "(the provider's network decides what reaches the host)")
    if facts["shm_bytes"] is not None and facts["shm_bytes"] < facts["shm_required_bytes"]:
        lines.append(f"/dev/shm is {facts['shm_bytes'] // MIB} MiB, below the "
                     f"{facts['shm_required_bytes'] // MIB} MiB NCCL's shared-memory transport "
                     f"needs for {facts['gpu_count']} GPUs"
                     + (" without cuMem host memory, which it uses here (NCCL 2.24+, CUDA driver 12.6+): "
                        "a warning, for NCCL's proxy and DataLoader workers still use /dev/shm"
                        if facts.get("shm_cumem") else ""))
    if facts["network_turbo"]:
        lines.append("/etc/network_turbo exists: downloads go through its proxy")
    if facts["data_dir"]:
        lines.append(f"{facts['data_dir']} is the data disk: builds go there, not to the system disk")
    return lines


def container_facts(gpu_count: int = 0, proc_root: str = "/proc", root: str = "/",
                    shm_path: str = "/dev/shm", data_dir_candidates=("/root/autodl-tmp",),
                    network_turbo_path: str = "/etc/network_turbo") -> dict:
    """The `ncclkit_container` fact (docs/clouds/autodl.md lists its keys)."""
    pid1 = pid1_name(proc_root)
    systemd = boots_with_systemd(pid1, root)
    writable = proc_sys_writable(proc_root)
    net_admin = has_net_admin(proc_root)
    shm = shm_bytes(shm_path)
    turbo_text = _read(network_turbo_path)
    download_env, turbo_problems = parse_network_turbo(turbo_text) if turbo_text is not None else ({}, [])
    facts = {
        "pid1": pid1,
        "systemd": systemd,
        "proc_sys_writable": writable,
        "net_admin": net_admin,
        "firewall_possible": net_admin,
        "shm_bytes": shm,
        "gpu_count": gpu_count,
        "shm_required_bytes": shm_required_bytes(gpu_count),
        "ip_local_port_range": port_range(proc_root),
        "network_turbo": turbo_text is not None,
        "download_env": download_env,
        "download_env_problems": turbo_problems,
        "data_dir": next((path for path in data_dir_candidates if os.path.isdir(path)), ""),
        # Filled by add_cumem_facts once the NCCL version is known (the survey does).
        "cuda_driver_version": "",
        "shm_cumem": False,
    }
    facts["shm_ok"] = shm is None or shm >= facts["shm_required_bytes"]
    facts["in_container"] = not systemd or not writable or not net_admin
    facts["adaptations"] = adaptations(facts)
    return facts
