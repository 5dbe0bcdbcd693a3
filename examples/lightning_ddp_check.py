"""A tiny PyTorch Lightning DDP run across nodes: proves the cluster trains and the ranks agree.

Start it on every node with the launch script the nccl_profile role writes:

    /opt/ncclkit/bin/ncclkit-torchrun examples/lightning_ddp_check.py            # CPU, Gloo
    /opt/ncclkit/bin/ncclkit-torchrun examples/lightning_ddp_check.py --gpu      # GPUs, NCCL

Every rank prints `ncclkit-check ... all-reduced <sum> weights <checksum>`: the sum of
1..world_size and a checksum of the trained weights, the same on every rank when DDP works.
The `starting` and `process group ready` lines tell how far a rank got when it hangs.
"""

from __future__ import annotations

import argparse
import os
import socket
import warnings
from datetime import timedelta


def log(message: str) -> None:
    print(f"ncclkit-check rank={os.environ.get('RANK', '?')} host={socket.gethostname()}: {message}",
          flush=True)


def resolved_hostname() -> str:
    """The address Gloo binds when GLOO_SOCKET_IFNAME is unset: the hostname's."""
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError as error:
        return f"nothing ({error.strerror}): without GLOO_SOCKET_IFNAME, Gloo falls back to loopback"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", action="store_true", help="train on GPUs over NCCL, not on CPU over Gloo")
    parser.add_argument("--steps", type=int, default=4, help="optimizer steps (default 4)")
    parser.add_argument("--timeout", type=float, default=300,
                        help="seconds a collective may wait before it fails (default 300)")
    args = parser.parse_args()
    log(f"starting; {socket.gethostname()} resolves to {resolved_hostname()}")

    import lightning as L
    import torch
    from lightning.pytorch.strategies import DDPStrategy
    from torch.utils.data import DataLoader, TensorDataset

    warnings.filterwarnings("ignore", module="lightning")
    torch.manual_seed(0)

    class Tiny(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(8, 1)

        def setup(self, stage: str) -> None:
            # Lightning calls this after the process group exists.
            log(f"process group ready: world size {self.trainer.world_size}")

        def training_step(self, batch, batch_index):
            features, target = batch
            return torch.nn.functional.mse_loss(self.layer(features), target)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.05)

    features = torch.randn(256, 8)
    data = DataLoader(TensorDataset(features, features.sum(dim=1, keepdim=True)), batch_size=16)
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    trainer = L.Trainer(
        accelerator="gpu" if args.gpu else "cpu",
        devices=local_world,
        num_nodes=int(os.environ.get("WORLD_SIZE", "1")) // local_world,
        strategy=DDPStrategy(process_group_backend="nccl" if args.gpu else "gloo",
                             timeout=timedelta(seconds=args.timeout)),
        max_steps=args.steps,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    model = Tiny()
    trainer.fit(model, data)

    device = trainer.strategy.root_device
    total = torch.tensor([float(trainer.global_rank + 1)], device=device)
    torch.distributed.all_reduce(total)
    checksum = sum(float(parameter.detach().double().sum()) for parameter in model.parameters())
    log(f"all-reduced {total.item():.1f} weights {checksum:.8f}")
    # Leave together and take the process group down before the interpreter does: without this,
    # Gloo's worker threads can outlive Python and abort the rank (SIGABRT, "terminate called
    # without an active exception"), leaving its peer waiting.
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
