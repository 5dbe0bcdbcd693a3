#!/usr/bin/env python
# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""NCCL over NET/Socket on one GPU host: levers beyond the autotune grid, and raw TCP per stream count.

The launch of h200_socket_grid.py (two ranks that NCCL takes for two nodes, one size, fixed -n/-w,
repetitions interleaved) over candidates that add NCCL_BUFFSIZE and a pinned channel count
(NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS) to the socket threads and sockets per thread. Raw TCP
of the same path is measured with 1, 2, 4 and 8 streams each way at once, before and after:
NCCL opens threads x sockets-per-thread streams (1 with its defaults, the proxy thread sending)
per channel and direction, so the stream count that matches a candidate is channels x that.

  h200_socket_levers.py BIN_DIR OUT_JSON [--reps 3] [--size 512M] [--iters 6] [--warmup 2]
"""

from __future__ import annotations

import json
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# pylint: disable=wrong-import-position
import h200_socket_grid  # noqa: E402

MIB = 1 << 20


def candidate(threads=None, socks=None, channels=None, buff_mib=None):
    """{name, env}: None leaves NCCL's own value."""
    env, parts = {}, []
    if threads:
        env.update(NCCL_SOCKET_NTHREADS=str(threads), NCCL_NSOCKS_PERTHREAD=str(socks))
        parts.append(f"threads={threads} socks={socks}")
    if channels:
        env.update(NCCL_MIN_NCHANNELS=str(channels), NCCL_MAX_NCHANNELS=str(channels))
        parts.append(f"channels={channels}")
    if buff_mib:
        env["NCCL_BUFFSIZE"] = str(buff_mib * MIB)
        parts.append(f"buffsize={buff_mib}M")
    return {"name": " ".join(parts) or "defaults", "env": env}


CANDIDATES = [
    candidate(),
    candidate(2, 2),
    candidate(1, 1),
    candidate(buff_mib=16),
    candidate(2, 2, buff_mib=8),
    candidate(2, 2, buff_mib=16),
    candidate(channels=4),
    candidate(1, 1, channels=4),
    candidate(1, 2, channels=4),
    candidate(2, 1, channels=4),
    candidate(2, 2, channels=4),
    candidate(1, 2, channels=4, buff_mib=16),
    candidate(1, 1, channels=8),
    candidate(2, 2, channels=1),
]


def main():
    parser = h200_socket_grid.run_arguments(__doc__, reps=3, iters=6, timeout=60, tcp_seconds=3,
                                            tcp_streams="1,2,4,8")
    args = parser.parse_args()
    logs = h200_socket_grid.logs_folder(args.out_json)
    streams = [int(s) for s in args.tcp_streams.split(",")]
    data = {"command": " ".join(sys.argv), "size": args.size, "iters": args.iters, "warmup": args.warmup,
            "reps": args.reps, "host": socket.gethostname(), "nproc": os.cpu_count(), "candidates": CANDIDATES,
            "repetitions": [], "results": {c["name"]: [] for c in CANDIDATES}, "tcp": []}

    def save():
        with open(args.out_json, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1, sort_keys=True)

    def tcp(phase):
        for count in streams:
            rate = dict(h200_socket_grid.tcp_rate(count, args.tcp_seconds), phase=phase)
            data["tcp"].append(rate)
            print("tcp:", json.dumps(rate), flush=True)
            save()

    tcp("before")
    for rep in range(args.reps):
        for cand in CANDIDATES:
            slug = cand["name"].replace(" ", "_").replace("=", "")
            busbw, seconds, rc = h200_socket_grid.run_nccl(args.bin_dir, cand["env"], args,
                                                           os.path.join(logs, f"{rep}-{slug}.txt"), args.timeout)
            entry = {"rep": rep, "name": cand["name"], "busbw_gbps": busbw, "seconds": seconds, "rc": rc}
            data["repetitions"].append(entry)
            data["results"][cand["name"]].append(busbw)
            print(json.dumps(entry), flush=True)
            save()
    tcp("after")
    decision = h200_socket_grid.nccl_autotune.choose(data["results"])
    data["decision"] = decision
    save()
    for row in decision["table"]:
        print("{name:40s} median {median} spread {spread} beats {beats}".format(**row), flush=True)
    print("decision:", decision["winner"], "-", decision["reason"], flush=True)


if __name__ == "__main__":
    main()
