"""What one host shows about the rendezvous path, read only: `ncclkit check`'s host side.

Everything here reads; nothing is written or started except short read-only commands
(`dmesg`, `nvidia-smi topo -m`, a Python asking for torch's version without importing it).
"""

from __future__ import annotations

import re
import socket
from typing import Callable, Dict, List, Optional

from ansible_collections.ncclkit.cluster.plugins.module_utils.host.container import shm_bytes
from ansible_collections.ncclkit.cluster.plugins.module_utils.host.command import run_command

# Where a process can get its environment from, as nccl_profile writes them (docs/profile.md).
# /etc/nccl.conf is NCCL's own file: it holds only NCCL_* variables, so Gloo is not asked of it.
START_PATHS = {
    "/etc/nccl.conf": ("NCCL_SOCKET_IFNAME",),
    "/etc/profile.d/ncclkit.sh": ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"),
    "/etc/ncclkit/nccl.env": ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"),
    "/opt/ncclkit/bin/ncclkit-env": ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"),
}
TORCHRUN = "/opt/ncclkit/bin/ncclkit-torchrun"
_ASSIGN = re.compile(r"(?:^|[\s;])(?:export\s+)?([A-Z_][A-Z0-9_]*)=(['\"]?)([^'\"\s;]*)\2")
_MASTER = re.compile(r"--master-addr\s+(\S+)\s+--master-port\s+(\d+)")
XID = re.compile(r"NVRM: Xid \(([^)]*)\): (\d+)")
ECC = re.compile(r"(?i)(double bit ecc|uncorrectable ecc|ecc error|row remap(?:ping)? failure)")


def read_text(path: str, limit: int = 1 << 20) -> Optional[str]:
    try:
        with open(path, "r", errors="replace") as handle:
            return handle.read(limit)
    except OSError:
        return None


def assignments(text: str) -> Dict[str, str]:
    """NAME=value, `export NAME='value'` and ncclkit-env's `export NAME=value` lines, last wins."""
    found = {}
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            continue
        for name, dummy, value in _ASSIGN.findall(line):
            found[name] = value
    return found


def start_paths(read: Callable[[str], Optional[str]] = read_text) -> Dict[str, dict]:
    """For each start path: whether it exists and the socket interface variables it sets."""
    paths = {}
    for path, names in START_PATHS.items():
        text = read(path)
        values = assignments(text) if text is not None else {}
        paths[path] = {"exists": text is not None, "wanted": list(names),
                       "values": {name: values[name] for name in names if name in values}}
    return paths


def profile_master(read: Callable[[str], Optional[str]] = read_text) -> dict:
    """MASTER_ADDR and port the profile's torchrun launcher uses, when the profile is written."""
    match = _MASTER.search(read(TORCHRUN) or "")
    return {"addr": match.group(1), "port": int(match.group(2))} if match else {}


def resolve(name: str) -> List[str]:
    """The IPv4 addresses getaddrinfo gives for `name`, in its order (the first is what torch and
    Gloo use)."""
    try:
        infos = socket.getaddrinfo(name, None, socket.AF_INET, socket.SOCK_STREAM)
    except OSError:
        return []
    seen = []
    for info in infos:
        if info[4][0] not in seen:
            seen.append(info[4][0])
    return seen


def memlock_kib() -> Optional[int]:
    """`ulimit -l` of this process in KiB; None when unlimited."""
    import resource
    soft, dummy = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    return None if soft == resource.RLIM_INFINITY else soft // 1024


def kernel_log(command=run_command) -> dict:
    """Xid and ECC lines from the kernel log: dmesg, else journalctl -k; says when neither reads."""
    for argv in (["dmesg"], ["journalctl", "-k", "-q", "--no-pager", "-b"]):
        rc, out, err = command(argv, 10)
        if rc == 0:
            lines = out.splitlines()
            return {"readable": True, "source": argv[0],
                    "xid": [line.strip() for line in lines if XID.search(line)][-20:],
                    "ecc": [line.strip() for line in lines if ECC.search(line)][-20:]}
        last = (err or out).strip().splitlines()[-1:] or [f"{argv[0]} exited {rc}"]
    return {"readable": False, "source": "", "error": last[0], "xid": [], "ecc": []}


def loaded_modules(read: Callable[[str], Optional[str]] = read_text) -> List[str]:
    return [line.split()[0] for line in (read("/proc/modules") or "").splitlines() if line.split()]


def torch_version(python: str, command=run_command) -> str:
    """torch's version from its package metadata (importing torch would take seconds)."""
    if not python:
        return ""
    rc, out, dummy = command([python, "-c", "import importlib.metadata as m; print(m.version('torch'))"], 10)
    return out.strip() if rc == 0 else ""


def topology(command=run_command) -> dict:
    rc, out, dummy = command(["nvidia-smi", "topo", "-m"], 15)
    return parse_topo(out) if rc == 0 else {}


def parse_topo(text: str) -> dict:
    """`nvidia-smi topo -m`: {"gpus": {GPU: {NIC name: link}}}, NIC columns named from the legend."""
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    if not lines:
        return {}
    header = lines[0].split()
    legend = {}
    for line in lines:
        match = re.match(r"\s*(NIC\d+):\s*(\S+)", line)
        if match:
            legend[match.group(1)] = match.group(2)
    gpus = {}
    for line in lines[1:]:
        words = line.split()
        if not words or not re.match(r"GPU\d+$", words[0]):
            continue
        links = dict(zip(header, words[1:]))
        gpus[words[0]] = {legend.get(col, col): links[col] for col in header if col.startswith(("NIC", "mlx", "efa"))
                          and col in links}
    return {"gpus": gpus}


def gather(hostname: str, python: str, gpus: bool, command=run_command,
           read: Callable[[str], Optional[str]] = read_text) -> dict:
    modules = loaded_modules(read)
    return {
        "hostname": hostname,
        "resolved": resolve(hostname),
        "start_paths": start_paths(read),
        "profile_master": profile_master(read),
        "shm_bytes": shm_bytes(),
        "memlock_kib": memlock_kib(),
        "kernel_log": kernel_log(command),
        "nvidia_peermem": "nvidia_peermem" in modules or "nv_peer_mem" in modules,
        # EFA's GPUDirect RDMA: the EFA driver's peer-memory client (or dma-buf, which no module shows)
        "efa_nv_peermem": "efa_nv_peermem" in modules,
        "torch_version": torch_version(python, command),
        "topology": topology(command) if gpus else {},
    }
