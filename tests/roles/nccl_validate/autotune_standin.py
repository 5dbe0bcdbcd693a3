#!/usr/bin/env python3
"""Stand-in for ncclkit-mpirun and all_reduce_perf on the lab (no GPU) whose bus bandwidth
depends on the tuning the ranks get, so that the autotune's choice can be tested.

As ncclkit-mpirun it reads only the variables forwarded with -x NAME (all that a rank on another
host gets of the launching environment) and prints an nccl-tests output of 2 ranks on node1 and
node2: busbw = 1.0 + 0.25 x min(sockets, 8) - 0.02 x (sockets above 8) GB/s, sockets =
NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD (NCCL's defaults count as 2), x 0.7 with
NCCL_ALGO or NCCL_PROTO set, with noise of +-0.02. So NCCL's defaults give 1.5, 8 sockets 3.0,
and the often-copied 2 x 4 with Ring/Simple 2.1. Each call is logged to $AUTOTUNE_STANDIN_LOG.
"""

import os
import random
import sys

HEADER = "#       size         count      type   redop    root     time   algbw   busbw  #wrong"
UNITS = "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
TEMPLATE = "\n".join([
    "# nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809",
    "# Collective test starting: all_reduce_perf",
    "# nThread 1 nGpus 1 minBytes {size} maxBytes {size} step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
    "validation: 0 graph: 0",
    "#",
    "# Using devices",
    "#  Rank  0 Group  0 Pid   1495 on      node1 device  0 [0000:00:06] NVIDIA H200",
    "#  Rank  1 Group  0 Pid   1496 on      node2 device  0 [0000:00:06] NVIDIA H200",
    "#",
    "#                                                              out-of-place                       in-place",
    HEADER + "     time   algbw   busbw  #wrong",
    UNITS + "             (us)  (GB/s)  (GB/s)",
    "   {size:>9}     134217728     float     sum      -1   179339    {bw:.2f}    {bw:.2f}       0   182508    "
    "{bw:.2f}    {bw:.2f}       0",
    "# Out of bounds values : 0 OK",
    "# Avg bus bandwidth    : {bw:.2f}",
    "#",
    "# Collective test concluded: all_reduce_perf",
    ""])


def busbw(env):
    threads = int(env.get("NCCL_SOCKET_NTHREADS") or "1")
    socks = int(env.get("NCCL_NSOCKS_PERTHREAD") or "2")
    sockets = threads * socks
    speed = 1.0 + 0.25 * min(sockets, 8) - 0.02 * max(0, sockets - 8)
    if env.get("NCCL_ALGO") or env.get("NCCL_PROTO"):
        speed *= 0.7
    return speed + random.uniform(-0.02, 0.02)


def main(argv):
    forwarded = {argv[i + 1]: os.environ.get(argv[i + 1], "") for i in range(len(argv) - 1) if argv[i] == "-x"}
    size = argv[argv.index("-e") + 1] if "-e" in argv else "536870912"
    size = {"512M": "536870912", "1G": "1073741824"}.get(size, size)
    tuning = {k: v for k, v in sorted(forwarded.items()) if k.startswith("NCCL_") and k not in (
        "NCCL_DEBUG", "NCCL_DEBUG_FILE", "NCCL_DEBUG_SUBSYS")}
    with open(os.environ.get("AUTOTUNE_STANDIN_LOG", "/tmp/ncclkit-autotune-standin.log"), "a") as log:
        log.write("-e {} {}\n".format(size, " ".join(f"{k}={v}" for k, v in tuning.items())))
    sys.stdout.write(TEMPLATE.format(size=size, bw=busbw(tuning)))


if __name__ == "__main__":
    main(sys.argv[1:])
