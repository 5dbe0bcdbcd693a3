#!/usr/bin/env python
"""How often examples/lightning_ddp_check.py (CPU, Gloo) finishes cleanly on a 2-node lab cluster,
as written and without its closing barrier + destroy_process_group, and how long a run takes.

Run as root from the checkout (after `make install`):
    .venv/bin/python benchmarks/lightning_check_repeat.py [--index 41] [--repeat 16]

It brings up lab K, runs tests/roles/nccl_profile/playbook.yml (nccl_preflight + nccl_profile) once,
then starts the example through ncclkit-torchrun on both nodes REPEAT times per variant, the two
variants interleaved so that both see the same load. Prints a Markdown table (docs/benchmarks.md
keeps one).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src"), str(REPO)]
from tests.nccl_profile.training_check import start_training, wait_for_training  # noqa: E402

from ncclkit.lab import Lab  # noqa: E402

EXAMPLE = REPO / "examples" / "lightning_ddp_check.py"
PLAYBOOK = REPO / "tests" / "roles" / "nccl_profile" / "playbook.yml"
SHUTDOWN = ("    torch.distributed.barrier()\n", "    torch.distributed.destroy_process_group()\n")


def without_shutdown(folder: Path) -> Path:
    """A copy of the example without its last two calls (in /tmp, which the lab nodes see)."""
    text = EXAMPLE.read_text()
    for line in SHUTDOWN:
        if line not in text:
            raise SystemExit(f"{EXAMPLE} no longer has {line.strip()!r}: update this benchmark")
        text = text.replace(line, "")
    copy = folder / "lightning_ddp_check_without_shutdown.py"
    copy.write_text(text)
    return copy


def converge(lab: Lab) -> None:
    argv = [str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(lab.inventory_path),
            str(PLAYBOOK), "-e", json.dumps({"nccl_profile_python": sys.executable})]
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg")}
    done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, env=env, timeout=600, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the profile play failed (rc {done.returncode}):\n{done.stdout[-3000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=int, default=41, help="lab index (default 41)")
    parser.add_argument("--repeat", type=int, default=16, help="runs per variant (default 16)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("the lab cluster needs root")
    lab = Lab(args.index)
    lab.down()
    with tempfile.TemporaryDirectory(prefix="ncclkit-repeat-") as folder:
        lab.up(nodes=2, outsider=True, inventory_path=Path(folder) / "hosts.yml")
        try:
            converge(lab)
            variants = {"as written": EXAMPLE, "without barrier + destroy": without_shutdown(Path(folder))}
            results = {name: [] for name in variants}
            for attempt in range(args.repeat):
                for name, script in variants.items():
                    run = wait_for_training(start_training(lab, script, profile=True), limit_s=120)
                    results[name].append(run)
                    print(f"{attempt} {name}: {run.return_codes} {run.seconds:.1f} s", file=sys.stderr)
        finally:
            lab.down()
    print("| variant | runs | failed | median s (clean runs) | slowest s (clean runs) |")
    print("|---|---|---|---|---|")
    for name, runs in results.items():
        clean = [run.seconds for run in runs if run.return_codes == [0, 0]]
        spread = (f"{statistics.median(clean):.1f} | {max(clean):.1f}" if clean else "- | -")
        print(f"| {name} | {len(runs)} | {len(runs) - len(clean)} | {spread} |")


if __name__ == "__main__":
    main()
