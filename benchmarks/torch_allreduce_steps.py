"""A small torch job for hang experiments: STEPS all-reduces of SIZE floats over NCCL (or Gloo
with --gloo), one line per step naming rank, pid and host, and the time per step at the end.
Started by torchrun (RANK, WORLD_SIZE, MASTER_ADDR/MASTER_PORT from it).

    torchrun ... benchmarks/torch_allreduce_steps.py [--steps 400] [--size 1048576] [--timeout 20] [--gloo]
"""
import argparse
import datetime
import os
import socket
import sys
import time

import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=400)
parser.add_argument("--size", type=int, default=1 << 20)
parser.add_argument("--timeout", type=float, default=20.0)
parser.add_argument("--pause", type=float, default=0.05, help="seconds between steps")
parser.add_argument("--gloo", action="store_true")
args = parser.parse_args()

backend = "gloo" if args.gloo else "nccl"
rank = int(os.environ["RANK"])
where = f"rank={rank} pid={os.getpid()} host={socket.gethostname()}"
print(f"steps: {where} init_process_group({backend})", flush=True)
device = torch.device("cpu") if args.gloo else torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
if not args.gloo:
    torch.cuda.set_device(device)
dist.init_process_group(backend, timeout=datetime.timedelta(seconds=args.timeout),
                        **({} if args.gloo else {"device_id": device}))
tensor = torch.ones(args.size, device=device)
started = time.perf_counter()
for step in range(args.steps):
    dist.all_reduce(tensor)
    if not args.gloo:
        torch.cuda.synchronize()
    if step % 20 == 0:
        print(f"steps: {where} step={step}", flush=True)
    if args.pause:
        time.sleep(args.pause)
elapsed = time.perf_counter() - started - args.pause * args.steps
print(f"steps: {where} done {args.steps} steps, {elapsed / args.steps * 1e6:.1f} us per all_reduce",
      flush=True)
dist.destroy_process_group()
sys.exit(0)
