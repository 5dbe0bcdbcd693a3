"""The job of the fault matrix: a small Lightning DDP run over Gloo (CPU) with fault hooks.

Started on every node by ncclkit-torchrun (benchmarks/fault_matrix.py). Without FAULT_* variables it
is a healthy run: STEPS optimizer steps of a model big enough (4 MiB of gradients) that a broken
path (MTU, loss, throttling) shows, then an all-reduce every rank checks. With the variables that
`ncclkit lab fault inject` prints for a job kind, rank FAULT_RANK does FAULT_JOB at step FAULT_STEP:

  stop        SIGSTOP itself (the others wait out the 60 s process-group timeout)
  kill        SIGKILL itself
  oom         allocate until the kernel kills it (the node's memory limit: `lab fault` sets it)
  exception   raise ValueError
  desync      skip one collective the other ranks make (their next ones pair with the wrong partner)
  straggler   sleep 10x a normal step before every step from FAULT_STEP on

Test code, never product code: the fault lives in the job, as a bug or a bad host would put it there.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import time
import warnings
from datetime import timedelta

TIMEOUT_S = float(os.environ.get("FAULT_JOB_TIMEOUT", "60"))
STEPS = int(os.environ.get("FAULT_JOB_STEPS", "6"))
OOM_CAP_MIB = 6144   # more than the memory limit `lab fault` sets for rank_oom_killed
WIDTH = 1024
STRAGGLE_S = 2.0


def log(message: str) -> None:
    print(f"fault-job rank={os.environ.get('RANK', '?')} host={socket.gethostname()}: {message}", flush=True)


def act(action: str, step: int) -> None:
    """What the faulty rank does at its step."""
    import torch
    log(f"step {step}: fault hook {action}")
    if action == "stop":
        os.kill(os.getpid(), signal.SIGSTOP)
    elif action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif action == "oom":
        # Touch every page, so the memory is really charged. Bounded: where no limit stops it, the
        # machine's own memory must not be what runs out.
        hoard = [torch.ones(64 << 20, dtype=torch.uint8) for dummy in range(OOM_CAP_MIB // 64)]
        raise RuntimeError(f"fault hook: {len(hoard) * 64} MiB allocated and no memory limit stopped it")
    elif action == "exception":
        raise ValueError(f"fault hook: bad batch at step {step} on rank {os.environ.get('RANK')}")


def main() -> None:
    log(f"starting; {socket.gethostname()} resolves to {socket.gethostbyname(socket.gethostname())}")
    import lightning as L
    import torch
    import torch.distributed as dist
    from lightning.pytorch.strategies import DDPStrategy
    from torch.utils.data import DataLoader, TensorDataset

    warnings.filterwarnings("ignore", module="lightning")
    torch.manual_seed(0)
    action = os.environ.get("FAULT_JOB", "")
    fault_rank = int(os.environ.get("FAULT_RANK", "-1"))
    fault_step = int(os.environ.get("FAULT_STEP", "1"))

    class Model(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(WIDTH, WIDTH)

        def setup(self, stage: str) -> None:
            log(f"process group ready: world size {self.trainer.world_size}")

        def on_train_batch_start(self, batch, batch_index) -> None:
            rank = self.trainer.global_rank
            started = time.monotonic()
            if rank == fault_rank and action == "straggler" and batch_index >= fault_step:
                time.sleep(STRAGGLE_S)
            elif rank == fault_rank and batch_index == fault_step and action in ("stop", "kill", "oom", "exception"):
                act(action, batch_index)
            if action == "desync" and batch_index == fault_step:
                if rank == fault_rank:
                    log(f"step {batch_index}: fault hook desync: skipping one all_reduce")
                else:
                    dist.all_reduce(torch.ones(7))
            log(f"step {batch_index} start ({time.monotonic() - started:.2f} s in hooks)")

        def training_step(self, batch, batch_index):
            features, target = batch
            return torch.nn.functional.mse_loss(self.layer(features), target)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.01)

    features = torch.randn(16 * STEPS * int(os.environ.get("WORLD_SIZE", "1")), WIDTH)
    data = DataLoader(TensorDataset(features, features.flip(1)), batch_size=16)
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    trainer = L.Trainer(accelerator="cpu", devices=local_world,
                        num_nodes=int(os.environ.get("WORLD_SIZE", "1")) // local_world,
                        strategy=DDPStrategy(process_group_backend="gloo", timeout=timedelta(seconds=TIMEOUT_S)),
                        max_steps=STEPS, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    started = time.monotonic()
    model = Model()
    trainer.fit(model, data)
    total = torch.tensor([float(trainer.global_rank + 1)])
    dist.all_reduce(total)
    log(f"done: all-reduced {total.item():.1f} in {time.monotonic() - started:.1f} s")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
