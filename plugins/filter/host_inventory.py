"""Filters that turn `nvidia-smi --format=csv` output into ncclkit facts."""

from __future__ import annotations

GPU_FIELDS = ("index", "name", "compute_cap", "driver_version", "memory_total_mib", "pci_bus_id")


def nvidia_smi_gpus(csv_lines):
    """Rows of `nvidia-smi --query-gpu=... --format=csv,noheader,nounits`, fields as GPU_FIELDS."""
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


class FilterModule:
    def filters(self):
        return {"nvidia_smi_gpus": nvidia_smi_gpus}
