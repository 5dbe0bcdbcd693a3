#!/usr/bin/env python
# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""NCCL over NET/Socket on one GPU host: the autotune grid, the re-measure and raw TCP, in one run.

Two ranks of all_reduce_perf that NCCL takes for two nodes (nccl_validate_net_loopback's launch:
a distinct NCCL_HOSTID per rank, module_utils/validate/loopback.py), at one message size with
fixed -n/-w, each candidate of nccl_validate's autotune grid (module_utils/validate/autotune.py
`grid`) repeated, the repetitions interleaved (rep 1 of every candidate, then rep 2, ...) so that a
drift of the machine hits all alike. The decision is `choose` of the same module; the winner is
then measured again against the defaults, interleaved, and `ratio` gives tuned/defaults with its
spread. Raw TCP of the same path: a socket test of as many streams each way at once as NCCL
opened for the winner (one process per stream end; 2 before and after, for the record), and
iperf3 --bidir where installed.

  h200_socket_grid.py BIN_DIR OUT_JSON [--reps 3] [--size 512M] [--iters 8] [--warmup 2]

Every repetition is written to OUT_JSON (and its output under OUT_JSON's folder, logs/), so the
decision can be made again from the file: `choose(data["results"])`.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import shutil
import socket
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "collections"))

# pylint: disable=wrong-import-position
from ansible_collections.ncclkit.cluster.plugins.module_utils import (  # noqa: E402
    nccl_autotune,
    nccl_net_loopback,
    nccl_tests_output,
)

# The values often quoted as "common tuning" with 4 socket threads (the grid's "common" has 2).
COMMON_4X4_ENV = {"NCCL_SOCKET_NTHREADS": "4", "NCCL_NSOCKS_PERTHREAD": "4",
                  "NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple"}
COMMON_4X4 = {"name": "common threads=4", "env": COMMON_4X4_ENV}
# INFO of INIT and NET only: the lines that show the transport (NET/Socket on lo), not every call.
BASE_ENV = {"NCCL_SOCKET_IFNAME": "lo", "NCCL_IB_DISABLE": "1", "NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET"}
CHUNK = 4 << 20


def run_nccl(bin_dir, env, args, log, timeout_s):
    """One all_reduce_perf launch; returns (busbw at the size, seconds, rc)."""
    run_env = dict(os.environ, **BASE_ENV, **nccl_net_loopback.RUN_ENV, **env)
    loop = nccl_net_loopback.plan({}, 1, sorted(set(BASE_ENV) | set(env)), "lo")
    program = [os.path.join(bin_dir, "all_reduce_perf"), "-b", args.size, "-e", args.size, "-g", "1",
               "-n", str(args.iters), "-w", str(args.warmup), "-c", "0"]
    argv = nccl_net_loopback.mpmd_argv(loop["launcher"] + program, len(loop["launcher"]), loop["rank_prefixes"])
    start = time.monotonic()
    with open(log, "w", encoding="utf-8") as out:
        out.write(f"# command: {' '.join(argv)}\n# env: {json.dumps(env, sort_keys=True)}\n")
        out.flush()
        try:
            rc = subprocess.run(argv, env=run_env, stdout=out, stderr=subprocess.STDOUT, timeout=timeout_s,
                                check=False).returncode
        except subprocess.TimeoutExpired:
            rc = 124
    seconds = round(time.monotonic() - start, 2)
    busbw = None
    if rc == 0:
        try:
            runs = nccl_tests_output.parse_file(log)
            busbw = runs[0].get("largest_size_busbw_gbps") if runs else None
        except nccl_tests_output.NcclTestsOutputError:
            busbw = None
    return busbw, seconds, rc


def _sink(port, queue):
    server = socket.create_server(("127.0.0.1", port))
    conn, dummy = server.accept()
    total, buf = 0, bytearray(CHUNK)
    while True:
        n = conn.recv_into(buf)
        if not n:
            break
        total += n
    queue.put(("recv", port, total))
    conn.close()
    server.close()


def _source(port, seconds, queue):
    for dummy in range(100):
        try:
            conn = socket.create_connection(("127.0.0.1", port))
            break
        except OSError:
            time.sleep(0.05)
    data = bytes(CHUNK)
    total, start = 0, time.monotonic()
    while time.monotonic() - start < seconds:
        conn.sendall(data)
        total += len(data)
    elapsed = time.monotonic() - start
    conn.close()
    queue.put(("sent", port, total, elapsed))


def tcp_rate(streams, seconds, base_port=29700):
    """Streams each way at once over 127.0.0.1 (the two directions of two hosts' link); GB/s each way."""
    queue = multiprocessing.Queue()
    procs = []
    ports = list(range(base_port, base_port + 2 * streams))
    for port in ports:
        procs.append(multiprocessing.Process(target=_sink, args=(port, queue)))
    for proc in procs:
        proc.start()
    time.sleep(0.3)
    sources = [multiprocessing.Process(target=_source, args=(port, seconds, queue)) for port in ports]
    for proc in sources:
        proc.start()
    for proc in sources + procs:
        proc.join(seconds + 30)
    sent = {}
    while not queue.empty():
        item = queue.get()
        if item[0] == "sent":
            sent[item[1]] = (item[2], item[3])
    # Ports of the first half carry "a->b", of the second "b->a": both directions at once.
    ways = []
    for half in (ports[:streams], ports[streams:]):
        byte_count = sum(sent.get(port, (0, 1))[0] for port in half)
        elapsed = max(sent.get(port, (0, 1))[1] for port in half)
        ways.append(byte_count / elapsed / 1e9)
    return {"streams_each_way": streams, "seconds": seconds, "gbytes_per_s_each_way": [round(w, 3) for w in ways],
            "gbytes_per_s": round(min(ways), 3), "gbit_per_s": round(min(ways) * 8, 2)}


def streams_each_way(log, env):
    """TCP streams NCCL opened each way in one launch: its channels (the log's "N coll channels")
    x the sockets of each connection (NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD; NCCL's
    default, 0 helper threads, sends on one socket from its proxy thread). None without the line."""
    match = None
    with open(log, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            match = re.search(r"NCCL INFO (\d+) coll channels", line) or match
    if not match:
        return None
    threads = int(env.get("NCCL_SOCKET_NTHREADS", "0"))
    socks = int(env.get("NCCL_NSOCKS_PERTHREAD", "1"))
    return int(match.group(1)) * max(1, threads * socks)


def iperf3_rate(seconds):
    if not shutil.which("iperf3"):
        return None
    server = subprocess.Popen(["iperf3", "-s", "-1", "-p", "5299"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    try:
        out = subprocess.run(["iperf3", "-c", "127.0.0.1", "-p", "5299", "-P", "2", "--bidir", "-t", str(seconds),
                              "-J"], capture_output=True, text=True, timeout=seconds + 30, check=False)
        end = json.loads(out.stdout or "{}").get("end", {})
        sent = end.get("sum_sent", {}).get("bits_per_second")
        received = end.get("sum_received_bidir_reverse", {}).get("bits_per_second")
        return {"gbit_per_s_sent": sent and round(sent / 1e9, 2), "gbit_per_s_reverse": received and
                round(received / 1e9, 2), "rc": out.returncode}
    except (ValueError, subprocess.TimeoutExpired) as exc:
        return {"error": str(exc)}
    finally:
        server.kill()
        server.wait()


def run_arguments(doc, reps, iters, timeout, tcp_seconds, tcp_streams=None):
    """The arguments every H200 NET/Socket benchmark takes (h200_socket_grid, _levers, _compare),
    with that script's defaults; --tcp-streams only where given."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n", maxsplit=1)[0])
    parser.add_argument("bin_dir")
    parser.add_argument("out_json")
    parser.add_argument("--reps", type=int, default=reps)
    parser.add_argument("--size", default="512M")
    parser.add_argument("--iters", type=int, default=iters)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--timeout", type=int, default=timeout)
    parser.add_argument("--tcp-seconds", type=int, default=tcp_seconds)
    if tcp_streams:
        parser.add_argument("--tcp-streams", default=tcp_streams)
    return parser


def logs_folder(out_json):
    """The folder beside OUT_JSON that keeps every run's log."""
    logs = os.path.join(os.path.dirname(os.path.abspath(out_json)), "logs")
    os.makedirs(logs, exist_ok=True)
    return logs


def main():
    parser = run_arguments(__doc__, reps=3, iters=8, timeout=90, tcp_seconds=5)
    args = parser.parse_args()
    logs = logs_folder(args.out_json)
    candidates = nccl_autotune.grid("any") + [COMMON_4X4]
    data = {"command": " ".join(sys.argv), "size": args.size, "iters": args.iters, "warmup": args.warmup,
            "reps": args.reps, "base_env": BASE_ENV, "loopback_env": nccl_net_loopback.RUN_ENV,
            "host": socket.gethostname(), "nproc": os.cpu_count(),
            "candidates": candidates, "repetitions": [], "results": {c["name"]: [] for c in candidates}}

    def save():  # after every measurement: a run stopped early keeps what it measured
        with open(args.out_json, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1, sort_keys=True)

    def measure(candidate, rep, phase):
        slug = candidate["name"].replace(" ", "_").replace("=", "")
        log = os.path.join(logs, f"{phase}-{rep}-{slug}.txt")
        busbw, seconds, rc = run_nccl(args.bin_dir, candidate["env"], args, log, args.timeout)
        streams[candidate["name"]] = streams_each_way(log, candidate["env"]) if rc == 0 else None
        entry = {"phase": phase, "rep": rep, "name": candidate["name"], "env": candidate["env"],
                 "busbw_gbps": busbw, "seconds": seconds, "rc": rc}
        data["repetitions"].append(entry)
        print(json.dumps(entry), flush=True)
        save()
        return busbw

    data["tcp_before"] = tcp_rate(2, args.tcp_seconds)
    print("tcp:", json.dumps(data["tcp_before"]), flush=True)
    streams = {}
    for rep in range(args.reps):
        for candidate in candidates:
            data["results"][candidate["name"]].append(measure(candidate, rep, "grid"))
    decision = nccl_autotune.choose(data["results"])
    data["decision"] = decision
    print("decision:", decision["winner"], "-", decision["reason"], flush=True)
    winner = next(c for c in candidates if c["name"] == decision["winner"])
    defaults = candidates[0]
    tuned, base = [], []
    for rep in range(args.reps):
        base.append(measure(defaults, rep, "remeasure"))
        tuned.append(measure(winner, rep, "remeasure"))
    data["remeasure"] = {"winner": winner["name"], "tuned": tuned, "defaults": base,
                         "ratio": nccl_autotune.ratio(tuned, base)}
    data["tcp_after"] = tcp_rate(2, args.tcp_seconds)
    data["iperf3"] = iperf3_rate(args.tcp_seconds)
    tuned_median = data["remeasure"]["ratio"]["tuned"]["median"]
    # Raw TCP at the stream count NCCL used for the winner, both ways at once: on a path bound by
    # the cores (loopback) TCP's rate grows with the streams, so 2 streams against NCCL's 8
    # compares unlike with unlike.
    data["streams_each_way"] = streams
    matched = streams.get(winner["name"])
    data["tcp_winner_streams"] = tcp_rate(matched, args.tcp_seconds) if matched else None
    tcp = (data["tcp_winner_streams"] or {}).get("gbytes_per_s")
    data["tuned_over_tcp"] = round(tuned_median / tcp, 3) if tuned_median and tcp else None
    save()
    print("remeasure:", json.dumps(data["remeasure"]["ratio"]), "tuned/tcp:", data["tuned_over_tcp"], flush=True)


if __name__ == "__main__":
    main()
