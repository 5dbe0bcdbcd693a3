#!/usr/bin/env python
"""Time and peak memory of `ncclkit diagnose` on a large log, and of `ncclkit parse` on a large
nccl-tests output, each measured in a subprocess of its own (wall time; peak RSS from
getrusage(RUSAGE_CHILDREN), which covers that one child).

    python3 benchmarks/diagnose_speed.py [--log-mb 100] [--rows 1000000] [--keep DIR]

The log is built from the lines of a real job (tests/samples/h200-stuck-torch_kill-node*.log: NCCL
INFO init and connection lines, torch's watchdog and ChildFailedError report) repeated for a
large cluster (hosts x 8 ranks, each with its own host:pid prefix), with the lines that used to
be slow, once per host: "NAME set by environment to VALUE" with 8000 spaces inside the value (the
old pattern was quadratic in them), and a 10000-character line. The job's last
lines are a rank killed by SIGKILL, so the verdict is checked too. The nccl-tests output is a
real all_reduce_perf table (h200-2host-socket-defaults.txt) grown to --rows result rows.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "tests" / "samples"


def nccl_template() -> list:
    """The NCCL lines of one rank of the real job, with its host and pid as placeholders."""
    lines = (SAMPLES / "h200-stuck-torch_kill-node1.log").read_text().splitlines()[1:]
    nccl = [line for line in lines if line.startswith("node1:1747:")]
    return [line.replace("node1:1747:", "{host}:{pid}:").replace("rank 1 nranks 2", "rank {rank} nranks {world}")
            .replace("rank 1 nRanks 2", "rank {rank} nRanks {world}") for line in nccl]


def write_log(path: Path, megabytes: int) -> dict:
    template = nccl_template()
    # Spaces inside the value: the old pattern backtracked over them once per character.
    padded_env = "{host}:{pid}:{pid} [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth1" + " " * 8000 + "x"
    long_line = "{host}:{pid}:{pid} [0] NCCL INFO " + "x" * 10000
    target, written, hosts = megabytes * 1024 * 1024, 0, 0
    with open(path, "w", encoding="utf-8") as out:
        while written < target:
            host = f"gpu-node-{hosts:04d}"
            block = []
            for local in range(8):
                fields = {"host": host, "pid": 1000 + local, "rank": hosts * 8 + local, "world": 4096}
                block += [line.format(**fields) for line in template]
                block.append(f"steps: rank={fields['rank']} pid={fields['pid']} host={host} step=40")
            block.append(padded_env.format(**fields))
            block.append(long_line.format(**fields))
            text = "\n".join(block) + "\n"
            out.write(text)
            written += len(text)
            hosts += 1
        # The end of the job: rank 9 is killed, rank 8 on the same host sees the peer go.
        out.write("[2026-12-04 03:53:20] gpu-node-0001:1000:1000 [0] misc/socket.cc:72 NCCL WARN socketProgress: "
                  "Connection closed by remote peer gpu-node-0001<33086>\n")
        out.write("mpirun noticed that process rank 9 with PID 0 on node gpu-node-0001 exited on signal 9 (Killed).\n")
    return {"hosts": hosts, "ranks": hosts * 8, "bytes": path.stat().st_size}


def write_perf(path: Path, rows: int) -> int:
    lines = (SAMPLES / "h200-2host-socket-defaults.txt").read_text().splitlines()[1:]
    first_row = next(i for i, line in enumerate(lines) if line.strip()[:1].isdigit())
    last_row = max(i for i, line in enumerate(lines) if line.strip()[:1].isdigit())
    sample_rows = lines[first_row:last_row + 1]
    with open(path, "w", encoding="utf-8") as out:
        out.write("\n".join(lines[:first_row]) + "\n")
        for index in range(rows):
            out.write(sample_rows[index % len(sample_rows)] + "\n")
        out.write("\n".join(lines[last_row + 1:]) + "\n")
    return path.stat().st_size


def measure(argv) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "src"), str(REPO / "collections"),
                                                       os.environ.get("PYTHONPATH", "")]))
    started = time.monotonic()
    done = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=False)
    seconds = time.monotonic() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # the children so far: this one only
    cpu = usage.ru_utime + usage.ru_stime - measure.cpu_before
    measure.cpu_before += cpu
    return {"seconds": seconds, "cpu": cpu, "peak_mib": usage.ru_maxrss / 1024, "rc": done.returncode,
            "first_line": (done.stdout or done.stderr).splitlines()[0] if (done.stdout or done.stderr) else ""}


measure.cpu_before = 0.0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--log-mb", type=int, default=100)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--keep", help="folder for the generated inputs (default: a temporary one)")
    parser.add_argument("--what", choices=("diagnose", "parse", "both"), default="both")
    args = parser.parse_args(argv)
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ncclkit-speed-"))
    folder.mkdir(parents=True, exist_ok=True)
    failed = False
    if args.what in ("diagnose", "both"):
        log = folder / "job.log"
        shape = write_log(log, args.log_mb)
        result = measure([sys.executable, "-m", "ncclkit.cli", "diagnose", str(log)])
        print(f"diagnose: {shape['bytes'] / 1048576:.0f} MiB, {shape['hosts']} hosts, {shape['ranks']} ranks: "
              f"{result['seconds']:.1f} s ({result['cpu']:.1f} s CPU), peak RSS {result['peak_mib']:.0f} MiB, "
              f"exit {result['rc']}")
        print(f"  verdict: {result['first_line'][:160]}")
        failed |= result["rc"] != 1 or "rank_killed" not in result["first_line"]
    if args.what in ("parse", "both"):
        perf = folder / "perf.txt"
        size = write_perf(perf, args.rows)
        result = measure([sys.executable, "-m", "ncclkit.cli", "parse", str(perf)])
        print(f"parse: {args.rows} rows ({size / 1048576:.0f} MiB): {result['seconds']:.1f} s "
              f"({result['cpu']:.1f} s CPU), peak RSS {result['peak_mib']:.0f} MiB, exit {result['rc']}")
        print(f"  verdict: {result['first_line'][:160]}")
    if not args.keep:
        for path in folder.iterdir():
            path.unlink()
        folder.rmdir()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
