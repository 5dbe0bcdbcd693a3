"""`ncclkit launch` on one GPU host: two simulated hosts (ansible_connection local, NCCL_HOSTID sim1 and
sim2, NCCL over NET/Socket on lo) sharing GPU 0, the Lightning job tests/lab/launch_job.py over NCCL
(--gpu): a rank's exception, then a rank that stops itself (SIGSTOP). Prints one summary line per
scenario; the run folders go to OUT.

    python3 benchmarks/h200_launch.py OUT [REPO_ROOT]        (ran on the lent H200; no Ansible needed)

The hosts are built in Python (ncclkit.launch.hosts.LaunchHost) as an inventory would give them, so
the machine needs no ansible-core; the launcher is torchrun with the master on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from pathlib import Path

from ncclkit.launch.hosts import LaunchHost
from ncclkit.launch.session import Launch

STALL_AFTER = 20


def main() -> int:
    out = Path(sys.argv[1]).resolve()
    root = Path(sys.argv[2] if len(sys.argv) > 2 else ".").resolve()
    launcher = out / "torchrun-local"
    launcher.write_text(f"#!/bin/sh\nexec {sys.executable} -m torch.distributed.run --master-addr 127.0.0.1 "
                        "--master-port 29611 --nproc-per-node 1 \"$@\"\n")
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR)
    env = {"NCCL_SOCKET_IFNAME": "lo", "NCCL_IB_DISABLE": "1", "NCCL_NVLS_ENABLE": "0", "NCCL_DEBUG": "WARN",
           "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1",
           "TORCH_NCCL_TRACE_BUFFER_SIZE": "2000", "TORCH_FR_BUFFER_SIZE": "2000"}
    hosts = [LaunchHost(name=f"sim{n + 1}", node_rank=n, address="localhost", connection="local", python=sys.executable,
                        launcher=str(launcher), env=dict(env, NCCL_HOSTID=f"sim{n + 1}")) for n in range(2)]
    job = str(root / "tests" / "lab" / "launch_job.py")
    scenarios = {"exception": ["--fail-rank", "1", "--fail-step", "3"],
                 "sigstop": ["--stop-rank", "1", "--stop-step", "3"]}
    for name, args in scenarios.items():
        events = out / f"{name}-events.txt"
        log = (out / f"{name}-stream.txt").open("w")
        session = Launch(hosts, [job, "--gpu", "--steps", "60", "--workers", "2", "--events", str(events), *args],
                         stall_after=STALL_AFTER, timeout=150, stop_on_hang=True, check=False, chdir=str(root),
                         report_parent=out / name, echo=lambda line, log=log: print(line, file=log, flush=True))
        document = session.run()
        log.close()
        marks = {}
        for line in events.read_text().splitlines() if events.exists() else []:
            parts = dict(part.split("=", 1) for part in line.split()[1:])
            if parts.get("event") and parts.get("t"):
                marks[(parts["rank"], parts["event"])] = float(parts["t"]) - document["started_at"]
        first = document["findings"][0] if document["findings"] else {}
        left = sum(len((host.get("stopped") or {}).get("left") or []) for host in document["hosts"])
        summary = {"scenario": name, "exit_code": document["exit_code"], "code": first.get("code"),
                   "host": first.get("host"), "rank": first.get("rank"), "cause": first.get("cause", "")[:400],
                   "timings_s": document["timings_s"],
                   "job_events_s": {f"{r}:{e}": round(t, 3) for (r, e), t in marks.items()},
                   "processes_left": left, "stall_after_s": STALL_AFTER}
        print(json.dumps(summary), flush=True)
        (out / f"{name}-summary.json").write_text(json.dumps(summary, indent=2))
        time.sleep(2)
    os.system(f"nvidia-smi --query-gpu=name,memory.used --format=csv > {out}/gpu-after.txt 2>&1")
    return 0


if __name__ == "__main__":
    sys.exit(main())
