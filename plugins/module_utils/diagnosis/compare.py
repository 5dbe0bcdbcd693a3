"""What differs between the ranks and hosts of one job: torch and CUDA versions, NCCL_* settings,
and the collective each rank was in when torch's watchdog timed out (a desync).

Pure Python 3.8+ standard library. diagnosis.log collects the values per host; the functions here
turn the differences into findings (common.findings.finding), naming the odd host or rank.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Dict, List, Optional

from ansible_collections.ncclkit.cluster.plugins.module_utils.common.findings import finding

# "PyTorch version: 2.3.0+cu121" (collect_env), "torch==2.3.1", "torch version: 2.4.0", "torch 2.4.0+cu124"
TORCH_VERSION = re.compile(r"\b(?:PyTorch|[Tt]orch)(?: version)?(?:==| ?[:=] ?| )v?(?P<version>\d+\.\d+\.\d+[\w.+]*)")
# "CUDA used to build PyTorch: 12.1", "CUDA runtime version: 12.1.105", "CUDA Version: 12.4", "+cuda12.4" (NCCL's build)
CUDA_VERSION = re.compile(r"(?:CUDA used to build PyTorch|CUDA runtime version|torch\.version\.cuda)\s*[:=]\s*"
                          r"(?P<version>\d+\.\d+)|\+cuda(?P<nccl>\d+\.\d+)")

# Settings that legitimately differ between hosts (NIC and device names, files, debugging).
_PER_HOST = frozenset((
    "NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_HOSTID", "NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE",
    "NCCL_TOPO_FILE", "NCCL_TOPO_DUMP_FILE", "NCCL_GRAPH_FILE", "NCCL_GRAPH_DUMP_FILE", "NCCL_COMM_ID",
    "NCCL_DEBUG_TIMESTAMP_FORMAT", "NCCL_RAS_ADDR", "NCCL_CUMEM_HOST_ENABLE",
))
FIX_SETTINGS = ("give every rank the same NCCL_* environment (one file for all hosts: /etc/nccl.conf or the "
                "launcher's -x/--env; nccl_profile writes one); settings that must agree (NCCL_PROTO, "
                "NCCL_ALGO, NCCL_IB_DISABLE, NCCL_NET, buffer and channel sizes) make the ranks pick different "
                "transports or protocols, and the job hangs or fails")
FIX_RUNTIME = ("run the same torch and CUDA build on every host (one container image or one environment); "
               "check with `python -c 'import torch; print(torch.__version__, torch.version.cuda)'` on each")
FIX_DESYNC = ("the program, not the network: every rank must call the same collectives in the same order with "
              "tensors of the same size; look for branches that depend on the rank or the data, uneven last "
              "batches, or shapes that differ per rank; TORCH_DISTRIBUTED_DEBUG=DETAIL checks every "
              "collective's shape, and TORCH_NCCL_TRACE_BUFFER_SIZE=2000 with TORCH_NCCL_DUMP_ON_TIMEOUT=1 "
              "records which collective each rank was in")


def _odd(values: Dict[str, str]):
    """(odd keys, the common value) when one value is held by more keys than any other; ties: sorted last."""
    counts = Counter(values.values())
    common = max(counts, key=lambda value: (counts[value], value))
    return [key for key, value in values.items() if value != common], common


def setting_findings(env_by_host: Dict[str, dict], origins: Dict[tuple, dict]) -> List[dict]:
    """NCCL_* settings NCCL printed with different values on different hosts (or on some hosts only)."""
    hosts = [host for host, env in env_by_host.items() if env]
    if len(hosts) < 2:
        return []
    found = []
    keys = sorted({key for host in hosts for key in env_by_host[host]} - _PER_HOST)
    for key in keys:
        values = {host: env_by_host[host].get(key, "(not set)") for host in hosts}
        if len(set(values.values())) < 2:
            continue
        odd, common = _odd(values)
        for host in odd[:1]:
            origin = origins.get((host, key)) or next((origins[(h, key)] for h in hosts if (h, key) in origins), {})
            others = ", ".join(sorted(h for h in hosts if values[h] == common)[:3])
            cause = (f"{key}={values[host]} on {host} but {key}={common} on {others}: the ranks of one job run "
                     "with different NCCL settings")
            found.append(with_evidence(finding("nccl_setting_mismatch", "warning", cause, FIX_SETTINGS, host=host,
                                               **_origin_fields(origin))))
    return found


def runtime_findings(versions: Dict[str, Dict[str, dict]]) -> List[dict]:
    """torch or CUDA versions that differ per host, one finding per odd host naming both.

    versions: {"torch"|"CUDA": {host: {version: origin}}}.
    """
    odd_hosts: Dict[str, list] = {}
    for what in ("torch", "CUDA"):
        by_host = {host: next(iter(seen)) for host, seen in versions.get(what, {}).items() if seen}
        if len(by_host) < 2 or len(set(by_host.values())) < 2:
            continue
        odd, common = _odd(by_host)
        others = sorted(h for h, v in by_host.items() if v == common)[:3]
        for host in odd:
            odd_hosts.setdefault(host, []).append((what, by_host[host], common, others,
                                                   versions[what][host][by_host[host]]))
    found = []
    for host, diffs in list(odd_hosts.items())[:4]:
        here = ", ".join(f"{what} {version}" for what, version, dummy, dummy, dummy in diffs)
        there = ", ".join(f"{what} {common}" for what, dummy, common, dummy, dummy in diffs)
        others = ", ".join(diffs[0][3])
        found.append(with_evidence(finding("runtime_version_mismatch", "error",
                                           f"{here} on {host} but {there} on {others}: the hosts run different "
                                           "builds, which fails or hangs in init or the first collective",
                                           FIX_RUNTIME, host=host, what=diffs[0][0], **_origin_fields(diffs[0][4]))))
    return found


def desync_finding(timeouts: List[dict], ranks: Dict[int, dict]) -> Optional[dict]:
    """collective_desync when the watchdog timeouts of different ranks name different collectives."""
    first: Dict[int, dict] = {}
    for timeout in timeouts:
        # Gloo's timeouts name no collective: they cannot disagree.
        if timeout["rank"] is not None and timeout["rank"] not in first and timeout["seq"] is not None:
            first[timeout["rank"]] = timeout
    if len(first) < 2:
        return None
    shapes = {rank: (t["seq"], t["op"], t.get("numel_in")) for rank, t in first.items()}
    if len(set(shapes.values())) < 2:
        return None
    counts = Counter(shapes.values())
    top = max(counts.values())
    if list(counts.values()).count(top) == 1 and top > 1:
        common = max(counts, key=counts.get)
        odd = min(rank for rank, shape in shapes.items() if shape != common)
    else:  # two ranks, or no majority: the one ahead in sequence, else the highest rank
        odd = max(shapes, key=lambda rank: (shapes[rank][0], rank))
        common = next(shape for rank, shape in shapes.items() if rank != odd and shape != shapes[odd])
    other = min(rank for rank, shape in shapes.items() if shape == common)
    cause = (f"the ranks are in different collectives (a desync): rank {odd} is in {_shape(shapes[odd])} while "
             f"rank {other} is in {_shape(common)}: one rank called another collective, or the same one with a "
             "tensor of another size")
    host = (ranks.get(odd) or {}).get("host") or first[odd].get("host")
    return with_evidence(finding("collective_desync", "error", cause, FIX_DESYNC, host=host, rank=odd,
                                 **_origin_fields(first[odd]["origin"])))


def dumps_desync_finding(desync: dict, job, source: str) -> dict:
    """collective_desync from flight-recorder dumps that record one collective differently."""
    rank, other = desync["rank"], desync["other_rank"]
    cause = (f"the flight-recorder dumps disagree (a desync): in process group {desync['pg']}, collective "
             f"#{desync['seq']} is {desync['op']} with inputs {desync['sizes']} on rank {rank} but "
             f"{desync['other_op']} with inputs {desync['other_sizes']} on rank {other}")
    host = (job.ranks.get(rank) or {}).get("host")
    made = finding("collective_desync", "error", cause, FIX_DESYNC, host=host, rank=rank, source=source, line=None,
                   count=1)
    made["evidence"] = f"flight recorder, process group {desync['pg']} #{desync['seq']}"
    return made


def _shape(shape) -> str:
    seq, op, numel = shape
    return f"{op} #{seq}" + (f" with NumelIn={numel}" if numel is not None else "")


def _origin_fields(origin: dict) -> dict:
    # evidence is one line here (the diagnosis' findings carry it as a string): set after finding().
    return {"source": (origin or {}).get("source"), "line": (origin or {}).get("line"),
            "time": (origin or {}).get("time"), "_evidence": (origin or {}).get("evidence", "")}


def with_evidence(made: dict) -> dict:
    """A finding made with _origin_fields, its evidence the line that shows it."""
    made["evidence"] = made.pop("_evidence", "")
    return made
