"""Read the ``-J`` JSON file of nccl-tests (schema versions 1 to 3) into a raw run.

The writer is nccl-tests' own ad-hoc one: booleans come as the strings "true"/"false", NaN as
the string "nan", ``root`` as a padded string ("    -1"), ``nwrong`` as a float or null (-c 0),
and version 1 spelled the footer keys ``average_bus_bandwidith``/``bandwidith``.
Only an allow-list of the recorded environment is kept: the file holds the whole environment
of the run, secrets included.

The raw run is completed by nccl_tests.output; import that module. Pure Python 3.8+ stdlib.
"""

from __future__ import annotations

import json
import math
import os
import re

# Environment variables that explain a network run; anything else (credentials, tokens,
# paths with user names) never leaves the file.
_ENV_ALLOWED = re.compile(
    r"(?:NCCL_\w+|CUDA_\w+|NVIDIA_\w+|OMPI_MCA_\w*(?:btl|oob)\w*|OMPI_MCA_pml|UCX_TLS|UCX_NET_DEVICES"
    r"|FI_PROVIDER|FI_EFA_\w+|TORCH_NCCL_\w+|GLOO_SOCKET_IFNAME|TP_SOCKET_IFNAME)")
# Defence in depth: even an allowed prefix never passes a name that reads like a secret.
_ENV_SECRET_LIKE = re.compile(r"SECRET|TOKEN|PASSW|CREDENTIAL|PRIVATE|API_?KEY|ACCESS_KEY|AUTH", re.IGNORECASE)

_CONFIG_KEYS = {
    "nthreads": "nthreads", "ngpus": "ngpus", "minimum_bytes": "min_bytes", "maximum_bytes": "max_bytes",
    "step_factor": "step_factor", "step_bytes": "step_bytes", "warmup_iters": "warmup_iters",
    "iterations": "iters", "aggregated_iterations": "agg_iters", "validation": "validation",
    "graph": "graph", "blocking_collectives": "blocking_collectives", "per_iter_timing": "per_iter_timing",
    "per_iter_skip": "per_iter_skip", "parallel_init": "parallel_init",
}


def parse_json_document(text):
    """Return the raw run of one nccl-tests JSON file; raise ValueError naming what is wrong."""
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise ValueError(
            "the input starts like nccl-tests -J JSON but is not valid JSON ({0}); a run killed "
            "while writing leaves it cut short: parse that run's text output (stdout) "
            "instead".format(str(error)[:200]))
    if not isinstance(document, dict) or not isinstance(document.get("results", []), list) \
            or not ("results" in document or "config" in document):
        raise ValueError("the JSON input is not an nccl-tests -J file: it has no 'results' list or "
                         "'config' object; pass the file that all_reduce_perf -J wrote")
    config = _dict(document.get("config"))
    args = [arg for arg in _list(document.get("args")) if isinstance(arg, str)] or None
    footer = _footer(document)
    return {
        "source": "json",
        "json_version": _int(document.get("version")),
        "program": os.path.basename(args[0]) if args else None,
        "nccl_tests_version": None,
        "nccl_library_code": _int(document.get("nccl_version")),
        "nccl_logged_versions": [],
        "devices": [_device(item) for item in _list(config.get("devices")) if isinstance(item, dict)],
        "rows": [row for row in (_row(item) for item in _list(document.get("results"))) if row],
        "out_of_bounds": _out_of_bounds(document.get("out_of_bounds")),
        "avg_busbw_gbps": footer["bandwidth"],
        "avg_busbw_ok": footer["ok"],
        "footer_seen": footer["seen"],
        "errors": [str(item)[:500] for item in _list(document.get("errors")) if str(item).strip()][:50],
        "warnings": [],
        "env": _allowed_env(document.get("env")),
        "args": args,
        "config": _config(config),
        "start_time": _str(document.get("start_time")),
        "end_time": _str(document.get("end_time")),
    }


def _footer(document):
    # Version 1 misspelled both keys.
    block = document.get("average_bus_bandwidth", document.get("average_bus_bandwidith"))
    if not isinstance(block, dict):
        return {"seen": False, "bandwidth": None, "ok": None}
    bandwidth = block.get("bandwidth", block.get("bandwidith"))
    return {"seen": True, "bandwidth": _float(bandwidth), "ok": _bool(block.get("okay"))}


def _out_of_bounds(block):
    block = _dict(block)
    return {"count": _int(block.get("count")), "ok": _bool(block.get("okay"))}


def _device(item):
    return {
        "rank": _int(item.get("rank")), "group": _int(item.get("group")), "pid": _int(item.get("pid")),
        "host": _str(item.get("hostname")), "device": _int(item.get("device")),
        "bus_id": _str(item.get("device_hex")), "name": _str(item.get("device_info")),
    }


def _row(item):
    if not isinstance(item, dict) or _int(item.get("size")) is None:
        return None
    row = {
        "size_bytes": _int(item.get("size")), "count": _int(item.get("count")),
        "type": _str(item.get("type")), "redop": _str(item.get("redop")), "root": _int(item.get("root")),
        "out_of_place": _half(item.get("out_of_place"), item.get("out_of_place_per_iter")),
        "in_place": _half(item.get("in_place"), item.get("in_place_per_iter")),
    }
    return row


def _half(block, per_iter):
    if not isinstance(block, dict):
        return None
    wrong = _float(block.get("nwrong"))
    half = {
        "time_us": _float(block.get("time", block.get("cpu_time"))),
        "algbw_gbps": _float(block.get("alg_bw")),
        "busbw_gbps": _float(block.get("bus_bw")),
        "wrong": int(round(wrong)) if wrong is not None else None,
        "error": None,
    }
    if isinstance(per_iter, dict):
        for key, name in (("min_us", "iter_min_us"), ("max_us", "iter_max_us"),
                          ("p99_us", "iter_p99_us"), ("cv_pct", "iter_cv_pct")):
            half[name] = _float(per_iter.get(key))
    return half


def _config(config):
    normalized = {}
    for key, name in _CONFIG_KEYS.items():
        if key in config:
            value = config[key]
            normalized[name] = _bool(value) if isinstance(value, str) and value in ("true", "false") \
                else _int(value)
    return normalized


def _allowed_env(entries):
    env = {}
    for entry in allowed_env_entries(entries):
        name, value = entry.split("=", 1)
        env[name] = value[:500]
    return env


def allowed_env_entries(entries):
    """The "NAME=value" entries of a -J file's env list that may leave the host (allow-list)."""
    kept = []
    for entry in _list(entries):
        if not isinstance(entry, str) or "=" not in entry:
            continue
        name = entry.split("=", 1)[0]
        if _ENV_ALLOWED.fullmatch(name) and not _ENV_SECRET_LIKE.search(name):
            kept.append(entry)
    return kept


def _dict(value):
    return value if isinstance(value, dict) else {}


def _list(value):
    return value if isinstance(value, list) else []


def _str(value):
    return value.strip() if isinstance(value, str) else None


def _int(value):
    """An int from an int, an integral float, or a padded numeric string ("    -1"); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*[-+]?\d{1,30}\s*", value):
        return int(value)
    return None


def _float(value):
    """A finite float from a number or numeric string; None for "nan", inf, null and the rest."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        number = float(value)
    except (ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def _bool(value):
    """nccl-tests writes booleans as "true"/"false"; "unchecked" and the rest mean unknown."""
    if isinstance(value, bool):
        return value
    return {"true": True, "false": False}.get(value) if isinstance(value, str) else None
