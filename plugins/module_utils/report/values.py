"""How report values read, in every rendering: sizes, numbers and the bandwidth series of the runs."""

from __future__ import annotations

from .verdict import NcclReportError, run_title


def human_size(size):
    """Bytes as nccl-tests sizes read: 8 B, 1 KiB, 512 MiB (exact multiples only)."""
    if not isinstance(size, int):
        return "?"
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= factor and size % factor == 0:
            return "{0} {1}".format(size // factor, unit)
    return "{0} B".format(size)


def number(value):
    """A measured value as a table shows it: '-' for none, floats without trailing zeros."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return "{0:g}".format(value)
    return str(value)


def bandwidth_lines(report):
    """[{label, sizes, busbw, algbw}]: out-of-place bandwidth per message size, one per run with rows
    (none when no run measured any)."""
    series = []
    for run in report.get("runs", []):
        points = [(row["size_bytes"], row["out_of_place"]["busbw_gbps"], row["out_of_place"].get("algbw_gbps"))
                  for row in ((run.get("perf") or {}).get("rows") or [])
                  if isinstance(row.get("size_bytes"), int) and row["size_bytes"] > 0
                  and isinstance(row.get("out_of_place"), dict)
                  and isinstance(row["out_of_place"].get("busbw_gbps"), (int, float))]
        if points:
            points.sort()
            series.append({"label": run.get("title") or run_title(run),
                           "sizes": [point[0] for point in points],
                           "busbw": [point[1] for point in points],
                           "algbw": [point[2] for point in points]})
    return series


def bandwidth_series(report):
    """bandwidth_lines, or NcclReportError when no run measured any (a plot needs a line)."""
    series = bandwidth_lines(report)
    if not series:
        raise NcclReportError("the report has no measured rows (no run produced bus bandwidth numbers), so "
                              "there is nothing to plot; see its report.md for why")
    return series


def gpudirect_fact(run):
    """What NCCL's channel lines in a run's output say of GPUDirect RDMA between hosts, per host
    (the diagnosis' hosts), e.g. "GPUDirect RDMA: in use (node1, node2)"; None without such lines."""
    hosts = ((run or {}).get("diagnosis") or {}).get("hosts") or {}
    states = {}
    for host, facts in sorted(hosts.items()):
        state = (facts or {}).get("gpudirect_rdma") if isinstance(facts, dict) else None
        if state:
            states.setdefault(state, []).append(host)
    if not states:
        return None
    words = {"in use": "in use", "partly": "on some channels only", "not in use": "not in use (staged through host memory)"}
    return "GPUDirect RDMA: " + "; ".join(f"{words.get(state, state)} ({', '.join(names)})"
                                          for state, names in sorted(states.items()))
