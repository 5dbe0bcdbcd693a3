"""A bounded all-reduce over Gloo across every node, started by ncclkit-torchrun on each node: the
validation of hosts without GPU. It takes the path a CPU job takes (the profile's launcher, the
rendezvous on MASTER_ADDR, Gloo on GLOO_SOCKET_IFNAME) and measures it; NCCL is not exercised.

Each rank prints one result line, `ncclkit-gloo {json}`, which the nccl_gloo_perf module reads.
"""

import argparse
import datetime
import json
import os
import socket
import sys
import time


def say(rank, text):
    print("ncclkit-gloo rank={0} host={1}: {2}".format(rank, socket.gethostname(), text), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--bytes", type=int, required=True, help="size of the all-reduced buffer")
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=300, help="Gloo's own timeout, in seconds")
    args = parser.parse_args()

    import torch
    import torch.distributed as dist

    rank = int(os.environ.get("RANK", "0"))
    say(rank, "starting (torch {0}, MASTER_ADDR={1}, GLOO_SOCKET_IFNAME={2})".format(
        torch.__version__, os.environ.get("MASTER_ADDR", "?"), os.environ.get("GLOO_SOCKET_IFNAME", "unset")))
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.timeout))
    world = dist.get_world_size()
    say(rank, "process group ready ({0} ranks)".format(world))

    elements = max(1, args.bytes // 4)
    buffer = torch.empty(elements, dtype=torch.float32)
    for dummy in range(args.warmup):
        buffer.fill_(rank + 1)
        dist.all_reduce(buffer)
    dist.barrier()
    seconds = 0.0
    correct = True
    expected = world * (world + 1) / 2
    for dummy in range(args.iters):
        buffer.fill_(rank + 1)
        started = time.perf_counter()
        dist.all_reduce(buffer)
        seconds += time.perf_counter() - started
        # Every element: a ring that drops or duplicates a chunk shows only in part of the buffer.
        correct = correct and bool(torch.all(buffer == expected))
    mean = seconds / max(1, args.iters)
    algbw = elements * 4 / mean / 1e9 if mean > 0 else 0.0
    print("ncclkit-gloo " + json.dumps({
        "rank": rank, "world": world, "host": socket.gethostname(), "bytes": elements * 4,
        "iters": args.iters, "seconds": round(mean, 6), "algbw_gbps": round(algbw, 4),
        # Ring all-reduce: each byte crosses 2(n-1)/n links, as nccl-tests counts bus bandwidth.
        "busbw_gbps": round(algbw * 2 * (world - 1) / world, 4), "correct": correct,
        "torch": torch.__version__}, sort_keys=True), flush=True)
    dist.destroy_process_group()
    return 0 if correct else 1


if __name__ == "__main__":
    sys.exit(main())
