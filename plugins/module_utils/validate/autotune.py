"""nccl_validate's autotune: the grid of candidates, the decision rule, the hardware fingerprint
and the record kept on each host.

Pure Python 3.8+ standard library. The nccl_autotune module runs the grid with it; the filters
of nccl_validate and nccl_profile read the record with it; a benchmark may import `choose`.

The decision rule (`choose`): for each candidate, the median of its repetitions' peak busbw (the
largest size's out-of-place busbw) and its spread (max - min). A candidate replaces NCCL's
defaults only if median(candidate) - median(defaults) > max(spread(candidate), spread(defaults));
among those the highest median wins (the first in grid order on a tie); else the defaults stay.
"""

from __future__ import annotations

import hashlib
import json

from ansible_collections.ncclkit.cluster.plugins.module_utils.profile.env import MAX_CHANNELS, MAX_IB_QPS, MAX_SOCKET_NTHREADS, MAX_SOCKETS, TUNING_NAMES
from ansible_collections.ncclkit.cluster.plugins.module_utils.profile.transport import expected_transport

DEFAULTS = "defaults"
SOCKET_THREADS = (1, 2, 4, 8)
SOCKS_PER_THREAD = (1, 2, 4)
SOCKET_NAMES = ("NCCL_SOCKET_NTHREADS", "NCCL_NSOCKS_PERTHREAD")
# More channels than NCCL's own choice (2 between two one-GPU nodes over NET/Socket), pinned
# (NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS), with few socket threads each: every channel opens
# its own sockets, so threads x channels must stay within the cores. On the H200 over NET/Socket
# 8 channels of 1 thread x 1 socket gave 11.6 GB/s where 2 threads x 2 sockets on NCCL's 2
# channels gave 8.0 (docs/benchmarks.md).
CHANNELS = (4, 8)
CHANNEL_SOCKET_PAIRS = ((1, 1), (2, 1))
# The values often copied from tuning guides for NCCL over TCP.
COMMON = {"NCCL_SOCKET_NTHREADS": "2", "NCCL_NSOCKS_PERTHREAD": "4", "NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple"}
ALGO_PROTO = {"NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple"}
# The opt-in IB-verbs grid (eRDMA, RoCE, InfiniBand): queue pairs per connection x a channel floor,
# the two variables Alibaba's eRDMA guides tune. The values span the range rather than copy a
# guide's: none of them was measured on an eRDMA fabric here, so only the measurement decides.
IB_QPS = (1, 2, 4, 8)
IB_MIN_CHANNELS = (None, 8, 16)
# nccl_expected_transport's names: any is NCCL over sockets (or NCCL's own choice without RDMA).
RDMA_TRANSPORTS = ("ib", "efa")
RECORD_VERSION = 1
# Where each host keeps the result (nccl_validate writes it, nccl_profile reads it and removes it on absent).
RECORD_PATH = "/etc/ncclkit/autotune.json"


class AutotuneError(ValueError):
    """Bad input to the autotune; the message names the cause and the fix."""


def socket_pairs():
    """(threads, sockets per thread) of the grid that NCCL accepts: threads 1-16, product <= 64."""
    return [(threads, socks) for threads in SOCKET_THREADS for socks in SOCKS_PER_THREAD
            if 1 <= threads <= MAX_SOCKET_NTHREADS and threads * socks <= MAX_SOCKETS]


def channel_candidates():
    """Socket pairs on a pinned channel count: [{name, env}] within NCCL's limits (1-64 channels)."""
    return [{"name": "threads={0} socks={1} channels={2}".format(threads, socks, channels),
             "env": {"NCCL_SOCKET_NTHREADS": str(threads), "NCCL_NSOCKS_PERTHREAD": str(socks),
                     "NCCL_MIN_NCHANNELS": str(channels), "NCCL_MAX_NCHANNELS": str(channels)}}
            for channels in CHANNELS for threads, socks in CHANNEL_SOCKET_PAIRS
            if 1 <= channels <= MAX_CHANNELS and threads * socks <= MAX_SOCKETS]


def ib_candidates():
    """NCCL_IB_QPS_PER_CONNECTION x NCCL_MIN_NCHANNELS (unset, or a floor), less NCCL's defaults."""
    candidates = []
    for qps in IB_QPS:
        for channels in IB_MIN_CHANNELS:
            env = {"NCCL_IB_QPS_PER_CONNECTION": str(qps)} if qps > 1 else {}
            if channels is not None and channels <= MAX_CHANNELS:
                env["NCCL_MIN_NCHANNELS"] = str(channels)
            if env and qps <= MAX_IB_QPS:
                candidates.append({"name": "qps={0} min_channels={1}".format(qps, channels or "auto"), "env": env})
    return candidates


def grid(transport, socket_grid=True, common=True, algo_proto=True, ib_grid=False):
    """The candidates in the order they are measured: [{name, env}], NCCL's defaults (no tuning
    variable) first. On RDMA transports (ib, efa) no candidate sets a socket variable, nor a
    channel count (those candidates come with socket variables). ib_grid adds the queue-pair and
    channel-floor candidates on NCCL's IB transport only (where the variables mean anything)."""
    rdma = str(transport or "any").lower() in RDMA_TRANSPORTS
    candidates = [{"name": DEFAULTS, "env": {}}]
    if socket_grid and not rdma:
        candidates += [{"name": "threads={0} socks={1}".format(threads, socks),
                        "env": {"NCCL_SOCKET_NTHREADS": str(threads), "NCCL_NSOCKS_PERTHREAD": str(socks)}}
                       for threads, socks in socket_pairs()]
        candidates += channel_candidates()
    if common:
        env = {name: value for name, value in COMMON.items() if not (rdma and name in SOCKET_NAMES)}
        candidates.append({"name": "common", "env": env})
    if algo_proto:
        candidates.append({"name": "algo=Ring proto=Simple", "env": dict(ALGO_PROTO)})
    if ib_grid and str(transport or "").lower() == "ib":
        candidates += ib_candidates()
    unique, seen = [], set()
    for candidate in candidates:  # on RDMA "common" is the same as the ALGO/PROTO one: measured once
        key = tuple(sorted(candidate["env"].items()))
        if key not in seen:
            seen.add(key)
            unique.append(candidate)
    return unique


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2.0


def stats(values):
    """{median, spread, min, max, n} of the repetitions that measured something (None: failed)."""
    measured = [float(value) for value in values or [] if value is not None]
    failed = len(values or []) - len(measured)
    if not measured:
        return {"median": None, "spread": None, "min": None, "max": None, "n": 0, "failed": failed}
    return {"median": round(median(measured), 4), "spread": round(max(measured) - min(measured), 4),
            "min": min(measured), "max": max(measured), "n": len(measured), "failed": failed}


def choose(results):
    """The decision on `results`, {candidate name: [peak busbw of each repetition, None when it
    failed]}, which must hold "defaults". Returns {winner, reason, table}: `table` lists each
    candidate's stats in the order given, with `margin` (median - the defaults' median) and
    `beats` (whether that margin is above both spreads). A candidate with a failed repetition
    never wins: a setting that sometimes fails is worse than any speed-up."""
    if DEFAULTS not in results:
        raise AutotuneError("the results hold no 'defaults' run: NCCL's defaults are what a candidate must beat")
    base = stats(results[DEFAULTS])
    table, winner = [], None
    for name, values in results.items():
        row = dict(stats(values), name=name, margin=None, beats=False)
        if name != DEFAULTS and base["n"] and row["n"] and not base["failed"] and not row["failed"]:
            row["margin"] = round(row["median"] - base["median"], 4)
            row["beats"] = row["margin"] > max(row["spread"], base["spread"])
            if row["beats"] and (winner is None or row["median"] > winner["median"]):
                winner = row
        table.append(row)
    if base["failed"] or not base["n"]:
        reason = "NCCL's defaults did not measure in every repetition: nothing can be compared, the defaults stay"
    elif winner is None:
        reason = "no candidate beat NCCL's defaults by more than the spread of the repetitions: the defaults stay"
    else:
        reason = "{0}: median {1} GB/s against the defaults' {2} GB/s, {3} above, more than the spread {4}".format(
            winner["name"], winner["median"], base["median"], winner["margin"], max(winner["spread"], base["spread"]))
    return {"winner": winner["name"] if winner else DEFAULTS, "reason": reason, "table": table}


def ratio(tuned, defaults):
    """The re-measure: {ratio, low, high} = median(tuned) / median(defaults), and its spread from
    min(tuned) / max(defaults) to max(tuned) / min(defaults); None where one side measured nothing."""
    tuned_stats, default_stats = stats(tuned), stats(defaults)
    if not tuned_stats["n"] or not default_stats["n"] or not default_stats["min"]:
        return {"ratio": None, "low": None, "high": None, "tuned": tuned_stats, "defaults": default_stats}
    return {"ratio": round(tuned_stats["median"] / default_stats["median"], 3),
            "low": round(tuned_stats["min"] / default_stats["max"], 3),
            "high": round(tuned_stats["max"] / default_stats["min"], 3),
            "tuned": tuned_stats, "defaults": default_stats}


def fingerprint(host):
    """The hardware a result holds for, from one host's facts: {nodes (the cluster's count),
    gpus (model names, one per GPU), nccl_version, transport (nccl_expected_transport's), ifname}.
    Each host keeps its own; the autotune measures again when any host's differs."""
    gpus = [str(gpu) for gpu in host.get("gpus") or []]
    return {
        "nodes": int(host.get("nodes") or 0),
        "gpus": "{0} x {1}".format(len(gpus), ",".join(sorted(set(gpus))) or "none"),
        "nccl_version": str(host.get("nccl_version") or ""),
        "transport": str(host.get("transport") or "any"),
        "nic": str(host.get("ifname") or ""),
    }


def host_hardware(facts, nodes, env):
    """The fingerprint of one host, from its facts as nccl_preflight sets them (nccl_preflight_gpus,
    ncclkit_nccl, ncclkit_cluster_ifname), the cluster's node count and the profile's environment
    (ncclkit_nccl_env, or the one nccl_profile is about to write): the one definition both
    nccl_validate and nccl_profile use."""
    facts = facts or {}
    return fingerprint({
        "nodes": nodes,
        "gpus": [gpu.get("name") for gpu in facts.get("nccl_preflight_gpus") or []],
        "nccl_version": (facts.get("ncclkit_nccl") or {}).get("version") or "",
        "transport": expected_transport(env),
        "ifname": facts.get("ncclkit_cluster_ifname") or "",
    })


def fingerprint_id(print_):
    """A short stable name of a fingerprint, for messages and the report."""
    return hashlib.sha256(json.dumps(print_, sort_keys=True).encode("utf-8")).hexdigest()[:12]


def record(print_, decision, tuning, remeasure=None):
    """What is kept on each host: the fingerprint, the tuning chosen and why (JSON-ready)."""
    return {"version": RECORD_VERSION, "fingerprint": print_, "fingerprint_id": fingerprint_id(print_),
            "tuning": dict(sorted((tuning or {}).items())), "winner": decision.get("winner", DEFAULTS),
            "reason": decision.get("reason", ""), "remeasure": remeasure}


def read_record(text, print_):
    """{tuning, current, reason} from a kept record's text: `current` is true only for a record
    of this version whose fingerprint equals `print_`; its tuning is {} otherwise."""
    if not text:
        return {"tuning": {}, "current": False, "reason": "no autotune result is kept on this host"}
    try:
        data = json.loads(text)
    except ValueError:
        return {"tuning": {}, "current": False, "reason": "the kept autotune result is not JSON: it is measured again"}
    if not isinstance(data, dict) or data.get("version") != RECORD_VERSION or not isinstance(data.get("tuning"), dict):
        return {"tuning": {}, "current": False, "reason": "the kept autotune result is of another version"}
    if data.get("fingerprint") != print_:
        return {"tuning": {}, "current": False,
                "reason": "the hardware changed since the autotune result was measured ({0} -> {1})".format(
                    data.get("fingerprint_id", "?"), fingerprint_id(print_))}
    return {"tuning": {str(k): str(v) for k, v in data["tuning"].items()}, "current": True,
            "reason": "kept autotune result {0} matches this hardware".format(fingerprint_id(print_)), "record": data}


def plan(kept_by_host, env_by_host, force, multi_run):
    """Whether this play measures: {measure, blocker, reason, tuning, clean_first}.

    `kept_by_host`: {host: read_record's result}; `env_by_host`: {host: the profile's
    environment (ncclkit_nccl_env)}; `multi_run`: the multi-node run's record. It measures when
    asked to (`force`) or when a host keeps no current result, and only over a multi-node run
    that completed and a profile whose only tuning variables are the kept result's. `tuning` is
    the kept result when it is current everywhere ({} else); `clean_first`: a host's profile
    carries its kept tuning, which must go before NCCL's defaults can be measured."""
    run = multi_run or {}
    kept = [kept_by_host[host] for host in sorted(kept_by_host)]
    tunings = {json.dumps(k.get("tuning") or {}, sort_keys=True) for k in kept}
    current = bool(kept) and all(k.get("current") for k in kept) and len(tunings) == 1
    tuning = dict(kept[0].get("tuning") or {}) if current else {}
    result = {"measure": False, "blocker": "", "tuning": tuning, "clean_first": False,
              "reason": kept[0]["reason"] if current else ""}
    stale = sorted(host for host, k in kept_by_host.items() if not k.get("current"))
    if current and not force:
        return result
    # Each host's profile may carry its own kept result (nccl_profile applies it where its host's
    # fingerprint matches); any other tuning value is the user's.
    carried = {host: {name: value for name, value in (env or {}).items() if name in TUNING_NAMES}
               for host, env in (env_by_host or {}).items()}
    foreign = sorted({"{0}={1}".format(name, value) for host, names in carried.items() for name, value in names.items()
                      if (kept_by_host.get(host) or {}).get("tuning", {}).get(name) != value})
    if not run.get("ran") or str(run.get("rc")) != "0" or not (run.get("perf") or {}).get("complete"):
        result["blocker"] = ("the multi-node run did not complete: the autotune measures only a working run; "
                             "fix the failure above first")
    elif foreign:
        result["blocker"] = ("the profile sets {0} (nccl_profile_tuning or a play's ncclkit_nccl_tuning): the "
                             "autotune measures against NCCL's defaults; remove them first".format(", ".join(foreign)))
    else:
        result.update(measure=True, clean_first=any(carried.values()),
                      reason=_why_measure(current and force, stale, kept_by_host))
    return result


def _why_measure(forced, stale, kept_by_host):
    if forced:
        return "asked to measure again (nccl_validate_autotune_force)"
    if stale:
        return "no current result on {0}: {1}".format(", ".join(stale), kept_by_host[stale[0]]["reason"])
    return "the hosts keep different autotune results"
