# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""nccl_preflight's one-line summary of a host, from the facts the survey set (pure Python)."""

from __future__ import annotations


def _gpus(gpus, absent_reason):
    if not gpus:
        return f"no GPU ({absent_reason})"
    names = ", ".join(dict.fromkeys(str(gpu.get("name")) for gpu in gpus))
    sms = "/".join(dict.fromkeys("sm_" + str(gpu.get("compute_cap", "")).replace(".", "") for gpu in gpus))
    plural = "s" if len(gpus) > 1 else ""
    return f"{len(gpus)} GPU{plural} ({names}, {sms}, driver {gpus[0].get('driver_version')})"


def _nics(nics):
    parts = []
    for nic in nics or []:
        if nic.get("loopback") or not nic.get("ipv4"):
            continue
        addresses = ",".join(str(address["address"]) for address in nic["ipv4"])
        route = " (default route)" if nic.get("default_route") else ""
        parts.append(f"{nic['name']} {addresses}/{nic['ipv4'][0]['prefix']} mtu {nic.get('mtu')}{route}")
    return ", ".join(parts)


def _toolchain(cuda, nccl, mpi):
    cuda, nccl, mpi = cuda or {}, nccl or {}, mpi or {}
    return ", ".join([
        f"CUDA {cuda.get('version')}" if cuda.get("found") else "no CUDA toolkit",
        f"NCCL {nccl.get('version')} ({nccl.get('source')})" if nccl.get("found") else "no NCCL",
        f"Open MPI {mpi.get('version') or '?'}" if mpi.get("found") else "no MPI",
    ])


def host_summary(host, cluster_nic, gpus, gpu_absent_reason, nics, cuda, nccl, mpi):
    """'node1: no GPU (...); cluster NIC eth1 10.0.0.11; NICs eth0 ..., eth1 ...; no CUDA toolkit, ...'"""
    return (f"{host}: {_gpus(gpus, gpu_absent_reason)}; cluster NIC {cluster_nic['ifname']} {cluster_nic['address']}; "
            f"NICs {_nics(nics)}; {_toolchain(cuda, nccl, mpi)}")
