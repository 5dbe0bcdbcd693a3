"""Read PyTorch's NCCL flight-recorder dumps (TORCH_NCCL_TRACE_BUFFER_SIZE / TORCH_FR_BUFFER_SIZE with
TORCH_NCCL_DUMP_ON_TIMEOUT: one pickle per rank, named <TORCH_FR_DUMP_TEMP_FILE><rank>) and say
which rank fell out of step, in which collective, as torch's own `torchfrtrace` does.

Pure Python 3.8+ standard library. A pickle can run code when loaded; these are read by an
unpickler that builds only dict, list, tuple, str, bytes, int, float, bool and None and refuses
every global (class or function), so a crafted file raises FlightRecorderError and runs nothing.

    dump = read_dump(data, name="nccl_trace_rank_0")   # {rank, pg: {id: {...}}, entries: [...]}
    verdict = compare_dumps([dump, ...])              # None, or {rank, missing, seq, op, pg, ...}
    desync = dumps_desync([dump, ...])                # None, or the first collective recorded differently
"""

from __future__ import annotations

import io
import pickle
import re
from typing import Dict, List, Optional

PICKLE_MAGIC = (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")
_RANK_IN_NAME = re.compile(r"(\d+)(?:\.pkl)?$")
_MAX_BYTES = 256 * 1024 * 1024


class FlightRecorderError(ValueError):
    """The file is not a flight-recorder dump this reader can take; the message says why."""


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        raise FlightRecorderError(f"refused: the pickle asks for {module}.{name}; a flight-recorder dump "
                                  "holds only plain values")

    def persistent_load(self, pid):
        raise FlightRecorderError("refused: the pickle uses persistent ids; not a flight-recorder dump")


def looks_like_pickle(data: bytes) -> bool:
    return bytes(data[:2]) in PICKLE_MAGIC


def read_dump(data: bytes, name: str = "") -> dict:
    """One rank's dump as {rank, version, pg: {pg_id: {ranks, last_completed, last_enqueued}}, entries}."""
    if len(data) > _MAX_BYTES:
        raise FlightRecorderError(f"{name}: over {_MAX_BYTES >> 20} MiB, not a flight-recorder dump")
    try:
        document = _PlainUnpickler(io.BytesIO(data)).load()
    except FlightRecorderError as error:
        raise FlightRecorderError(f"{name}: {error}") from None
    except Exception as error:  # a damaged pickle raises anything from EOFError to MemoryError
        raise FlightRecorderError(f"{name}: not a readable pickle ({type(error).__name__}: {error})"[:300]) from None
    if not isinstance(document, dict) or not isinstance(document.get("entries"), list):
        raise FlightRecorderError(f"{name}: a pickle, but not a flight-recorder dump (no 'entries' list)")
    rank = document.get("rank")
    if not isinstance(rank, int):
        match = _RANK_IN_NAME.search(name)
        rank = int(match.group(1)) if match else None
    return {"rank": rank, "name": name, "version": str(document.get("version", "?")),
            "pg": _groups(document), "entries": [_entry(e) for e in document["entries"] if isinstance(e, dict)]}


def _int(value, default=None):
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _groups(document: dict) -> Dict[str, dict]:
    groups: Dict[str, dict] = {}
    config = document.get("pg_config") if isinstance(document.get("pg_config"), dict) else {}
    status = document.get("pg_status") if isinstance(document.get("pg_status"), dict) else {}
    for pg_id in set(map(str, config)) | set(map(str, status)):
        conf = config.get(pg_id) if isinstance(config.get(pg_id), dict) else {}
        stat = status.get(pg_id) if isinstance(status.get(pg_id), dict) else {}
        ranks = conf.get("ranks")
        if isinstance(ranks, str):  # written as "[0, 1]"
            ranks = [int(r) for r in re.findall(r"\d+", ranks[:100000])]
        groups[pg_id] = {"ranks": [r for r in ranks or [] if isinstance(r, int)],
                         "desc": str(conf.get("desc", "")),
                         "last_completed": _int(stat.get("last_completed_collective")),
                         "last_enqueued": _int(stat.get("last_enqueued_collective"))}
    return groups


def _entry(entry: dict) -> dict:
    pg = entry.get("process_group")
    pg_id = str(pg[0]) if isinstance(pg, (tuple, list)) and pg else str(entry.get("pg_id", "?"))
    return {"pg": pg_id, "seq": _int(entry.get("collective_seq_id")), "op": str(entry.get("profiling_name", "?")),
            "state": str(entry.get("state", "?")), "p2p": bool(entry.get("is_p2p")),
            "sizes": _sizes(entry.get("input_sizes"))}


def _sizes(value) -> Optional[str]:
    """"[[1024]]" for the input_sizes a dump records (shapes of the tensors), or None."""
    if not isinstance(value, (list, tuple)):
        return None
    return str([list(shape)[:8] if isinstance(shape, (list, tuple)) else shape for shape in value[:8]])[:200]


def _op_name(profiling_name: str) -> str:
    # "nccl:all_reduce" -> "all_reduce"
    return profiling_name.split(":", 1)[-1]


def compare_dumps(dumps: List[dict]) -> Optional[dict]:
    """The rank behind the others and the collective it did not finish, or None when all agree.

    Per process group: a rank of the group with no dump is the first suspect (it never reached the
    dump: stopped, dead or stuck outside NCCL); else the rank with the lowest last completed
    collective. The collective is the one after the lowest last completed, as any dump records it.
    """
    by_rank = {d["rank"]: d for d in dumps if d["rank"] is not None}
    group_ids = sorted({pg for d in dumps for pg in d["pg"]}, key=lambda g: (g != "0", g))
    for pg_id in group_ids:
        members = sorted({r for d in dumps for r in d["pg"].get(pg_id, {}).get("ranks", [])})
        completed = {rank: d["pg"][pg_id]["last_completed"] for rank, d in by_rank.items()
                     if pg_id in d["pg"] and d["pg"][pg_id]["last_completed"] is not None}
        if not completed:
            continue
        missing = [rank for rank in members if rank not in by_rank]
        low = min(completed.values())
        behind = [rank for rank, seq in completed.items() if seq == low]
        if not missing and low == max(completed.values()):
            continue
        seq = low + 1
        op = next((_op_name(e["op"]) for d in dumps for e in d["entries"] if e["pg"] == pg_id and e["seq"] == seq),
                  "?")
        if missing:
            return {"pg": pg_id, "rank": missing[0], "missing": missing, "seq": seq, "op": op,
                    "reporting": sorted(completed), "last_completed": completed}
        return {"pg": pg_id, "rank": behind[0], "missing": [], "seq": seq, "op": op,
                "reporting": sorted(completed), "last_completed": completed}
    return None


def dumps_desync(dumps: List[dict]) -> Optional[dict]:
    """The first collective (per process group, by sequence number) that the ranks' dumps record
    differently: another operation or other input sizes on one rank. {pg, seq, rank, op, sizes,
    other_rank, other_op, other_sizes}, or None when every dump that records it agrees."""
    recorded: Dict[tuple, Dict[int, dict]] = {}
    for dump in dumps:
        if dump["rank"] is None:
            continue
        for entry in dump["entries"]:
            if entry["seq"] is not None and not entry["p2p"]:
                recorded.setdefault((entry["pg"], entry["seq"]), {}).setdefault(dump["rank"], entry)
    for (pg_id, seq) in sorted(recorded, key=lambda key: (key[0] != "0", key[0], key[1])):
        by_rank = recorded[(pg_id, seq)]
        shapes = {rank: (_op_name(e["op"]), e["sizes"]) for rank, e in by_rank.items()}
        if len(set(shapes.values())) < 2:
            continue
        counts: Dict[tuple, int] = {}
        for shape in shapes.values():
            counts[shape] = counts.get(shape, 0) + 1
        common = max(counts, key=lambda shape: counts[shape])
        odd = [rank for rank, shape in sorted(shapes.items()) if shape != common]
        rank = odd[0] if counts[common] > 1 else max(shapes)
        other = min(r for r, shape in shapes.items() if shape != shapes[rank])
        return {"pg": pg_id, "seq": seq, "rank": rank, "op": shapes[rank][0], "sizes": shapes[rank][1],
                "other_rank": other, "other_op": shapes[other][0], "other_sizes": shapes[other][1]}
    return None
