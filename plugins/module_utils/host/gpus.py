"""The GPUs as `nvidia-smi --query-gpu` lists them: one reader for nccl_preflight's facts.

Python 3.8+ standard library. Parsing is apart from running so that the filter of the same name
and the tests read recorded output.
"""

from __future__ import annotations

from ansible_collections.ncclkit.cluster.plugins.module_utils.host.command import MISSING, run_command

GPU_FIELDS = ("index", "name", "compute_cap", "driver_version", "memory_total_mib", "pci_bus_id")
# nvidia-smi's names for GPU_FIELDS, in the same order.
GPU_QUERY = "index,name,compute_cap,driver_version,memory.total,pci.bus_id"


def parse_gpus(csv_lines) -> list:
    """Rows of `nvidia-smi --query-gpu=GPU_QUERY --format=csv,noheader,nounits` -> GPU dicts.

    A row that is not a GPU (a driver message such as "No devices were found") raises ValueError
    naming it: the GPU count must never be guessed."""
    gpus = []
    for line in csv_lines:
        if not line.strip():
            continue
        values = [value.strip() for value in line.split(",")]
        if len(values) != len(GPU_FIELDS):
            raise ValueError(
                f"nvidia-smi printed {line!r}; expected {len(GPU_FIELDS)} comma-separated fields "
                f"({', '.join(GPU_FIELDS)})"
            )
        gpu = dict(zip(GPU_FIELDS, values))
        gpu["index"] = int(gpu["index"])
        gpu["memory_total_mib"] = int(float(gpu["memory_total_mib"]))
        gpus.append(gpu)
    return gpus


def read_gpus(nvidia_smi: str, command=run_command, timeout: float = 60.0) -> tuple:
    """(gpus, absent_reason): the reason is empty when GPUs were listed, else says why there are
    none (the command is missing, failed, or listed nothing) in words fit for a fail message."""
    rc, out, err = command([nvidia_smi, f"--query-gpu={GPU_QUERY}", "--format=csv,noheader,nounits"], timeout)
    if rc == 0 and out.strip():
        return parse_gpus(out.splitlines()), ""
    if rc == MISSING and not out.strip():
        return [], f"{nvidia_smi} not found"
    return [], f"{nvidia_smi} failed: {err.strip() or out.strip() or 'it listed no GPUs'}"
