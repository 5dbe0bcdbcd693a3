"""The result of nccl_validate's Gloo all-reduce (roles/nccl_validate/files/gloo_allreduce.py)
from the logs of its ranks, gated like an nccl-tests run: every rank reported, every element
correct, bus bandwidth above the floor.

Pure Python 3.8+ standard library.
"""

from __future__ import annotations

import json
from typing import Iterable, List, Optional

MARK = "ncclkit-gloo {"
_NUMBERS = ("bytes", "seconds", "algbw_gbps", "busbw_gbps")


def rank_results(lines: Iterable[str]) -> List[dict]:
    """Each rank's result object, found anywhere in a line (launcher prefixes, interleaved output)."""
    found = {}
    decoder = json.JSONDecoder()
    for line in lines:
        start = line.find(MARK)
        if start < 0:
            continue
        try:
            value, dummy = decoder.raw_decode(line, start + len(MARK) - 1)
        except ValueError:
            continue
        if (isinstance(value, dict) and isinstance(value.get("rank"), int)
                and all(isinstance(value.get(key), (int, float)) and not isinstance(value.get(key), bool)
                        for key in _NUMBERS)):
            found[value["rank"]] = value
    return [found[rank] for rank in sorted(found)]


def gloo_perf(lines: Iterable[str], expected_ranks: int, min_busbw_gbps: Optional[float] = None) -> dict:
    """The facts of one Gloo run: ranks, hosts, bandwidth (the slowest rank's), gates, passed."""
    ranks = rank_results(lines)
    hosts = sorted({str(rank.get("host")) for rank in ranks})
    worst = min(ranks, key=lambda rank: rank["busbw_gbps"]) if ranks else None
    gates = [_gate("expected_ranks", len(ranks) == expected_ranks,
                   "{0} of {1} rank(s) reported a result{2}".format(
                       len(ranks), expected_ranks,
                       "" if len(ranks) == expected_ranks else " (missing: rank(s) {0})".format(
                           ", ".join(str(r) for r in sorted(set(range(expected_ranks)) - {x["rank"] for x in ranks}))
                           or "none of the expected numbers")))]
    wrong = [rank["rank"] for rank in ranks if rank.get("correct") is not True]
    gates.append(_gate("correct", not wrong and bool(ranks),
                       "every element correct on every rank" if ranks and not wrong
                       else "wrong sums on rank(s) {0}".format(", ".join(map(str, wrong))) if wrong
                       else "no rank checked its result"))
    if min_busbw_gbps:
        value = worst["busbw_gbps"] if worst else None
        gates.append(_gate("min_busbw", value is not None and value >= min_busbw_gbps,
                           "busbw {0} GB/s (slowest rank) against a floor of {1} GB/s".format(
                               "?" if value is None else value, min_busbw_gbps)))
    return {
        "backend": "gloo",
        "ranks": len(ranks),
        "hosts": hosts,
        "bytes": worst["bytes"] if worst else None,
        "iters": worst.get("iters") if worst else None,
        "seconds": max(rank["seconds"] for rank in ranks) if ranks else None,
        "peak_busbw_gbps": worst["busbw_gbps"] if worst else None,
        "peak_busbw_size_bytes": worst["bytes"] if worst else None,
        "algbw_gbps": worst["algbw_gbps"] if worst else None,
        "torch_version": worst.get("torch") if worst else None,
        "gates": gates,
        "passed": all(gate["passed"] for gate in gates),
    }


def _gate(name, passed, message):
    return {"name": name, "passed": bool(passed), "message": message}
