#!/usr/bin/env python
# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""NCCL over NET/Socket on one GPU host at one size: NCCL's defaults, the common tuning values, the
autotuned profile (the tuning nccl_validate's autotune kept) and raw TCP of the same path, in one run.

The launch of h200_socket_grid.py (two ranks NCCL takes for two nodes), the candidates' repetitions
interleaved. Raw TCP is measured both directions at once, as the ring all-reduce of two ranks
sends, with as many streams each way as NCCL opened for the candidate compared (its channels x the
sockets of each connection, read from the launch's log), and at 1-16 streams for the whole curve:
on a loopback path TCP is bound by the cores that copy, so its rate grows with the streams, and a
figure at another stream count than NCCL's compares unlike with unlike.

  h200_socket_compare.py BIN_DIR OUT_JSON --tuning-json /etc/ncclkit/autotune.json [--reps 5]
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# pylint: disable=wrong-import-position
import h200_socket_grid  # noqa: E402

nccl_autotune = h200_socket_grid.nccl_autotune
# Beyond the autotune's grid, to see whether more channels or larger buffers would carry more.
EXPLORE = [
    {"name": "threads=1 socks=1 channels=16",
     "env": {"NCCL_SOCKET_NTHREADS": "1", "NCCL_NSOCKS_PERTHREAD": "1", "NCCL_MIN_NCHANNELS": "16",
             "NCCL_MAX_NCHANNELS": "16"}},
    {"name": "threads=1 socks=1 channels=8 buffsize=16M",
     "env": {"NCCL_SOCKET_NTHREADS": "1", "NCCL_NSOCKS_PERTHREAD": "1", "NCCL_MIN_NCHANNELS": "8",
             "NCCL_MAX_NCHANNELS": "8", "NCCL_BUFFSIZE": str(16 << 20)}},
]


def main():
    parser = h200_socket_grid.run_arguments(__doc__, reps=5, iters=6, timeout=60, tcp_seconds=3,
                                            tcp_streams="1,2,4,8,16")
    parser.add_argument("--tuning-json", required=True, help="the autotune's kept result (its `tuning`)")
    args = parser.parse_args()
    # NCCL reads /etc/nccl.conf in every rank (a variable of the environment wins): a profile's
    # tuning there would run under "defaults" too.
    conf = ""
    if os.path.exists("/etc/nccl.conf"):
        with open("/etc/nccl.conf", encoding="utf-8", errors="replace") as handle:
            conf = handle.read()
    tuned_there = sorted(name for name in nccl_autotune.TUNING_NAMES if re.search(r"^" + name + "=", conf, re.M))
    if tuned_there:
        sys.exit("/etc/nccl.conf sets {}: NCCL's defaults cannot be measured; move it away first".format(
            ", ".join(tuned_there)))
    logs = h200_socket_grid.logs_folder(args.out_json)
    with open(args.tuning_json, encoding="utf-8") as handle:
        kept = json.load(handle)
    candidates = [{"name": "defaults", "env": {}},
                  {"name": "common", "env": dict(nccl_autotune.COMMON)},
                  h200_socket_grid.COMMON_4X4,
                  {"name": "autotuned", "env": dict(kept.get("tuning") or {})}] + EXPLORE
    data = {"command": " ".join(sys.argv), "size": args.size, "iters": args.iters, "warmup": args.warmup,
            "reps": args.reps, "host": socket.gethostname(), "nproc": os.cpu_count(), "kept": kept,
            "candidates": candidates, "repetitions": [], "results": {c["name"]: [] for c in candidates},
            "streams": {}, "tcp": {}}

    def save():
        with open(args.out_json, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1, sort_keys=True)

    def tcp(phase, counts):
        for count in counts:
            rate = h200_socket_grid.tcp_rate(count, args.tcp_seconds)
            data["tcp"].setdefault(str(count), []).append(rate["gbytes_per_s"])
            print("tcp", phase, json.dumps(rate), flush=True)
            save()

    counts = [int(c) for c in args.tcp_streams.split(",")]
    tcp("before", counts)
    for rep in range(args.reps):
        for cand in candidates:
            log = os.path.join(logs, "{}-{}.txt".format(rep, cand["name"].replace(" ", "_").replace("=", "")))
            busbw, seconds, rc = h200_socket_grid.run_nccl(args.bin_dir, cand["env"], args, log, args.timeout)
            data["results"][cand["name"]].append(busbw)
            data["streams"][cand["name"]] = h200_socket_grid.streams_each_way(log, cand["env"])
            entry = {"rep": rep, "name": cand["name"], "busbw_gbps": busbw, "seconds": seconds, "rc": rc}
            data["repetitions"].append(entry)
            print(json.dumps(entry), flush=True)
            save()
    matched = sorted({n for n in data["streams"].values() if n} - set(counts))
    tcp("after", counts + matched)
    stats = {name: nccl_autotune.stats(values) for name, values in data["results"].items()}
    tcp_median = {count: nccl_autotune.median(values) for count, values in data["tcp"].items()}
    data["stats"] = stats
    data["tcp_median"] = tcp_median
    tuned = stats["autotuned"]["median"]
    streams = data["streams"].get("autotuned")
    data["ratios"] = {
        "autotuned_over_defaults": nccl_autotune.ratio(data["results"]["autotuned"], data["results"]["defaults"]),
        "common_over_defaults": nccl_autotune.ratio(data["results"]["common"], data["results"]["defaults"]),
        "autotuned_streams_each_way": streams,
        "autotuned_over_tcp_same_streams": round(tuned / tcp_median[str(streams)], 3)
        if tuned and streams and str(streams) in tcp_median else None,
        "autotuned_over_tcp_2_streams": round(tuned / tcp_median["2"], 3) if tuned and "2" in tcp_median else None,
        "autotuned_over_tcp_best": round(tuned / max(tcp_median.values()), 3) if tuned else None,
    }
    save()
    for name, row in stats.items():
        streams = data["streams"].get(name)
        print("{:20s} median {} spread {} streams {}".format(name, row["median"], row["spread"], streams), flush=True)
    print("tcp medians:", json.dumps(tcp_median), flush=True)
    print("ratios:", json.dumps(data["ratios"]), flush=True)


if __name__ == "__main__":
    main()
