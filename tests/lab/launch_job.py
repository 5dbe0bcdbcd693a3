"""A Lightning DDP job over Gloo (or NCCL with --gpu) for `ncclkit launch`'s tests and benchmarks,
with the failure asked for:

    --fail-rank R --fail-step S    rank R raises ValueError("bad batch at step S") in that step
    --stop-rank R --stop-step S    rank R stops itself (SIGSTOP) in that step
    --checkpoint-s C               rank 0 alone writes a checkpoint for C seconds after training
                                   (the others wait in a barrier)
    --validate-s V                 a validation pass of about V seconds on every rank
    --steps N --step-s X           N training steps of about X seconds each

Every rank starts a child that double-forks into a session of its own and sleeps (a leftover a
process-group kill misses), and its DataLoader has 2 workers. Each rank prints
`launch-job rank=R event=NAME t=UNIX_TIME` at its milestones, and appends it to the file
--events names (the tests read them there).
"""

from __future__ import annotations

import argparse
import atexit
import os
import signal
import subprocess
import sys
import time
import warnings
from datetime import timedelta


def event(name: str) -> None:
    line = f"launch-job rank={os.environ.get('RANK', '?')} event={name} t={time.time():.3f}"
    print(line, flush=True)
    if os.environ.get("LAUNCH_JOB_EVENTS"):  # also to a file: what a launcher relays may be lost when it is killed
        with open(os.environ["LAUNCH_JOB_EVENTS"], "a") as handle:
            handle.write(line + "\n")


def busy(seconds: float) -> None:
    """Python work whose stack moves (what a real step or validation pass looks like to py-spy)."""
    end = time.time() + seconds
    total = 0
    while time.time() < end:
        for number in range(20000):
            total += number * number
        time.sleep(0.01)


def double_fork() -> None:
    """A grandchild in a session of its own, reparented away from the rank: it sleeps for an hour."""
    code = ("import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
            "        line = f'launch-job rank={os.environ.get(\"RANK\", \"?\")} event=sleeper pid={os.getpid()}'\n"
            "        print(line, flush=True)\n"
            "        if os.environ.get('LAUNCH_JOB_EVENTS'):\n"
            "            open(os.environ['LAUNCH_JOB_EVENTS'], 'a').write(line + '\\n')\n"
            "        time.sleep(3600)\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", action="store_true")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--step-s", type=float, default=0.3)
    parser.add_argument("--fail-rank", type=int, default=-1)
    parser.add_argument("--fail-step", type=int, default=2)
    parser.add_argument("--stop-rank", type=int, default=-1)
    parser.add_argument("--stop-step", type=int, default=2)
    parser.add_argument("--checkpoint-s", type=float, default=0.0)
    parser.add_argument("--checkpoint-dir", default="/tmp")
    parser.add_argument("--validate-s", type=float, default=0.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--events", default="", help="append the events to this file too")
    args = parser.parse_args()
    if args.events:
        os.environ["LAUNCH_JOB_EVENTS"] = args.events
    rank = int(os.environ.get("RANK", "0"))
    event("start")
    atexit.register(event, "exit")  # the last thing the process does (after an exception's traceback too)
    double_fork()

    import lightning as L
    import torch
    from lightning.pytorch.strategies import DDPStrategy
    from torch.utils.data import DataLoader, TensorDataset

    warnings.filterwarnings("ignore")
    torch.manual_seed(0)

    class Job(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(8, 1)

        def training_step(self, batch, batch_index):
            if batch_index == 0:
                event("training")
            if rank == args.fail_rank and batch_index == args.fail_step:
                event("raise")
                raise ValueError(f"bad batch at step {batch_index}")
            if rank == args.stop_rank and batch_index == args.stop_step:
                event("sigstop")
                os.kill(os.getpid(), signal.SIGSTOP)
            busy(args.step_s)
            features, target = batch
            return torch.nn.functional.mse_loss(self.layer(features), target)

        def validation_step(self, batch, batch_index):
            if batch_index == 0:
                event("validation")
            busy(args.validate_s / 4)
            features, target = batch
            return torch.nn.functional.mse_loss(self.layer(features), target)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.05)

    features = torch.randn(16 * max(args.steps, 1), 8)
    dataset = TensorDataset(features, features.sum(dim=1, keepdim=True))
    train = DataLoader(dataset, batch_size=16, num_workers=args.workers, persistent_workers=args.workers > 0)
    validate = DataLoader(TensorDataset(features[:64], features[:64].sum(dim=1, keepdim=True)), batch_size=16)
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    trainer = L.Trainer(
        accelerator="gpu" if args.gpu else "cpu", devices=local_world,
        num_nodes=int(os.environ.get("WORLD_SIZE", "1")) // local_world,
        strategy=DDPStrategy(process_group_backend="nccl" if args.gpu else "gloo", timeout=timedelta(seconds=1800)),
        max_steps=args.steps, max_epochs=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
        enable_model_summary=False, num_sanity_val_steps=0, limit_val_batches=4 if args.validate_s else 0)
    trainer.fit(Job(), train, validate if args.validate_s else None)
    if args.checkpoint_s:
        if rank == 0:
            event("checkpoint")
            path = os.path.join(args.checkpoint_dir, f"launch-job-{os.getpid()}.ckpt")
            end = time.time() + args.checkpoint_s
            with open(path, "wb") as handle:
                while time.time() < end:
                    handle.write(os.urandom(1 << 16))
                    handle.flush()
                    os.fsync(handle.fileno())
                    busy(0.05)
            os.unlink(path)
        torch.distributed.barrier()
    event("done")
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
