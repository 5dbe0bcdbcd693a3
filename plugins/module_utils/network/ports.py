"""The TCP ports NCCL needs between hosts: the ephemeral range, the rendezvous ports, samples.

Pure Python 3.8+ standard library: the nccl_firewall and nccl_reachability modules (and the
module_utils they use) and the reachability filters share it.
"""

from __future__ import annotations

from typing import Iterable, List, Sequence, Tuple

# Ports below this are system services (SSH among them); NCCL never uses them.
LOWEST_PORT = 1024


class PortError(ValueError):
    """A port or range that cannot be used; the message names the variable and the fix."""


def parse_port_range(value, name="nccl_network_port_range") -> Tuple[int, int]:
    """[lo, hi], (lo, hi) or "lo-hi" -> (lo, hi), both within LOWEST_PORT..65535, lo < hi."""
    if isinstance(value, str):
        parts = value.replace(" ", "").split("-")
    elif isinstance(value, (list, tuple)):
        parts = list(value)
    else:
        parts = []
    try:
        low, high = (int(part) for part in parts)
    except (TypeError, ValueError):
        raise PortError(f"{name} is {value!r}; write it as [lowest, highest], e.g. [32768, 60999]") from None
    if not LOWEST_PORT <= low < high <= 65535:
        raise PortError(f"{name} is {low}-{high}; it must satisfy {LOWEST_PORT} <= lowest < highest <= 65535 "
                        "(the Linux default is 32768-60999)")
    return low, high


def check_port(value, name) -> int:
    try:
        port = int(value)
    except (TypeError, ValueError):
        raise PortError(f"{name} is {value!r}; it must be a TCP port number") from None
    if not LOWEST_PORT <= port <= 65535 or isinstance(value, bool):
        raise PortError(f"{name} is {value!r}; it must be a TCP port from {LOWEST_PORT} to 65535")
    return port


def sample_ports(low: int, high: int, between: int = 3) -> List[int]:
    """The lowest and highest port of the range and `between` evenly spaced ports inside it."""
    span = high - low
    inner = [low + span * step // (between + 1) for step in range(1, between + 1)]
    return sorted({low, high, *inner})


def merge_ports(ports: Iterable, ranges: Iterable[Tuple[int, int]] = ()) -> List[Tuple[int, int]]:
    """Single ports and (lo, hi) ranges -> sorted, disjoint, merged (lo, hi) ranges."""
    spans = sorted([(int(p), int(p)) for p in ports] + [(int(a), int(b)) for a, b in ranges])
    merged: List[List[int]] = []
    for low, high in spans:
        if merged and low <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], high)
        else:
            merged.append([low, high])
    return [tuple(pair) for pair in merged]


def covers(spans: Sequence[Tuple[int, int]], port: int) -> bool:
    return any(low <= port <= high for low, high in spans)


def describe(spans: Sequence[Tuple[int, int]], joiner=", ", dash="-") -> str:
    """[(29500, 29500), (32768, 60999)] -> '29500, 32768-60999'."""
    return joiner.join(str(low) if low == high else f"{low}{dash}{high}" for low, high in spans)
