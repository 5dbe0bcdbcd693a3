"""The GPU fault kinds' job (benchmarks/h200_fault_kinds.sh): STEPS all-reduces of 16 Mi floats over
NCCL, one line per step, and the fault hooks of benchmarks/fault_job.py for the NCCL side:
FAULT_JOB=oom (rank FAULT_RANK allocates on the GPU until CUDA runs out), stop (SIGSTOP itself),
kill (SIGKILL itself), desync (skips one all_reduce the others make) at step FAULT_STEP. Started
by torchrun; test code, never product code."""

import datetime
import os
import signal
import socket
import sys
import time

import torch
import torch.distributed as dist

rank = int(os.environ["RANK"])
action, fault_rank = os.environ.get("FAULT_JOB", ""), int(os.environ.get("FAULT_RANK", "-1"))
fault_step, steps = int(os.environ.get("FAULT_STEP", "20")), int(os.environ.get("STEPS", "60"))
where = f"rank={rank} pid={os.getpid()} host={socket.gethostname()}"
print(f"h200-fault-job: {where} init_process_group(nccl)", flush=True)
device = torch.device("cuda", 0)
torch.cuda.set_device(device)
dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=float(os.environ.get("TIMEOUT", "30"))),
                        device_id=device)
tensor = torch.ones(16 << 20, device=device)
for step in range(steps):
    if rank == fault_rank and step == fault_step and action:
        print(f"h200-fault-job: {where} step={step} fault hook {action}", flush=True)
        if action == "oom":
            hoard = []
            while True:
                hoard.append(torch.empty(8 << 30, dtype=torch.uint8, device=device))
        elif action == "stop":
            os.kill(os.getpid(), signal.SIGSTOP)
        elif action == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
    if not (action == "desync" and rank == fault_rank and step == fault_step):
        dist.all_reduce(tensor)
    torch.cuda.synchronize()
    print(f"h200-fault-job: {where} step={step}", flush=True)
    time.sleep(0.05)
print(f"h200-fault-job: {where} done", flush=True)
dist.destroy_process_group()
sys.exit(0)
