#!/usr/bin/env python
"""Time and peak memory of `ncclkit diagnose` on a large log, of `ncclkit parse` and of the
nccl_perf module's work on large nccl-tests outputs, each measured in a subprocess of its own
(wall time; CPU time and peak RSS from os.wait4() of that one child).

    python3 benchmarks/diagnose_speed.py [--log-mb 100] [--rows 400000] [--perf-rows 1000000]
        [--what all|diagnose|parse|perf] [--before TREE] [--keep DIR]

The log is built from the lines of a real job (tests/samples/h200-stuck-torch_kill-node*.log: NCCL
INFO init and connection lines, torch's watchdog and ChildFailedError report) repeated for a
large cluster (hosts x 8 ranks, each with its own host:pid prefix), each host's lines in one of the
shapes real logs have (SHAPES: timestamps, mpirun/torchrun/Ray labels, collector columns, colours,
CRLF) with what training prints between them (torch's warnings, progress bars glued with \\r, loss
lines), and the lines that used to be slow, once per host: "NAME set by environment to VALUE" with
8000 spaces inside the value (the old pattern was quadratic in them), and a 10000-character line. The job's last
lines are a rank killed by SIGKILL, so the verdict is checked too. The nccl-tests outputs are a
real all_reduce_perf table (h200-2host-socket-defaults.txt) grown to --rows (for `ncclkit parse`,
whose files stop at 64 MiB) and --perf-rows result rows (for nccl_perf: its parse, gates and the
JSON of the facts it returns, with the size limit raised; then the module itself, when the tree
has its max_size_mib option).

--before TREE measures every case again with the code of TREE, an older copy of this repository
(`git archive main | tar -x -C TREE`), in the same run, and prints the ratio after/before.
"""

from __future__ import annotations

import argparse
import json
import os
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


# The shapes a line takes in real logs (docs/diagnosis.md, "What the engine reads"): each host's
# lines get one, in turn, so the log holds them all in equal parts.
SHAPES = (
    "{line}",
    "[2026-12-04 03:5{minute}:{second:02d}] {line}",               # NCCL_DEBUG_TIMESTAMP_FORMAT
    "[1,{rank}]<stdout>:{line}",                                   # mpirun --tag-output
    "[rank{rank}]:{line}",                                         # torchrun's rank prefix
    "[default{local}]:{line}",                                     # torchrun --tee
    "(RayTrainWorker pid={pid}, ip=10.0.{host_index}.2) {line}",   # Ray
    "2026-12-04T03:5{minute}:{second:02d}.123Z stdout F {line}",   # a log collector's columns
    "\x1b[32m{line}\x1b[0m",                                        # colours
)


def training_lines(rank: int, pid: int, host: str) -> list:
    """What a training rank prints besides NCCL: torch's warnings, progress bars glued with \\r, losses."""
    lines = [f"W1204 03:50:{rank % 60:02d}.474000 {pid} torch/distributed/run.py:793] Setting OMP_NUM_THREADS "
             "environment variable for each process to be 1 in default"]
    for step in range(0, 40, 4):
        progress = "".join(f"Epoch 0: {p:3d}%|{'#' * (p // 10):<10}| {p * 10}/1000 [00:{p // 2:02d}<00:50, "
                           f"9.9it/s, loss={1.5 - p / 100:.3f}]\r" for p in range(step, step + 4))
        lines.append(progress)
        lines.append(f"steps: rank={rank} pid={pid} host={host} step={step} loss={2.0 - step / 40:.4f}")
    return lines


def write_log(path: Path, megabytes: int) -> dict:
    template = nccl_template()
    # Spaces inside the value: the old pattern backtracked over them once per character.
    padded_env = "{host}:{pid}:{pid} [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth1" + " " * 8000 + "x"
    long_line = "{host}:{pid}:{pid} [0] NCCL INFO " + "x" * 10000
    target, written, hosts = megabytes * 1024 * 1024, 0, 0
    with open(path, "w", encoding="utf-8", newline="") as out:
        while written < target:
            host = f"gpu-node-{hosts:04d}"
            shape = SHAPES[hosts % len(SHAPES)]
            end = "\r\n" if hosts % 3 == 0 else "\n"  # some hosts' logs went through Windows
            block = []
            for local in range(8):
                fields = {"host": host, "pid": 1000 + local, "rank": hosts * 8 + local, "world": 4096}
                shaped = dict(fields, local=local, host_index=hosts % 250, minute=hosts % 10, second=local)
                block += [shape.format(line=line.format(**fields), **shaped) for line in template]
                rank_lines = training_lines(fields["rank"], 1000 + local, host)
                block += [shape.format(line=line, **shaped) for line in rank_lines]
            block.append(padded_env.format(**fields))
            block.append(long_line.format(**fields))
            text = end.join(block) + end
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


# What the nccl_perf module does with a file, without Ansible around it: read, gate, and the JSON
# of the facts it returns (the size limit raised: a million rows print over 64 MiB).
PERF_WORK = """
import json, sys
from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests.output import parse_file, summarize
facts = summarize(parse_file(sys.argv[1], max_bytes=1 << 30), min_busbw_gbps=1.0, expected_ranks=2)
document = json.dumps({"changed": False, "ansible_facts": {"nccl_perf": facts}})
print("PASSED" if facts["passed"] else "FAILED", facts.get("row_count", len(facts["rows"])), "rows,",
      len(facts["rows"]), "in the facts,", len(document), "bytes of JSON;", facts["gates"][-1]["message"])
"""


def measure(argv, tree: Path = REPO) -> dict:
    """Run argv with the code of `tree`; wall time, and CPU time and peak RSS of that child alone."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tree / "src"), str(tree / "collections"),
                                                       os.environ.get("PYTHONPATH", "")]))
    with tempfile.TemporaryFile() as out:
        started = time.monotonic()
        child = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=tree)
        dummy, status, usage = os.wait4(child.pid, 0)
        seconds = time.monotonic() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        lines = out.read().decode("utf-8", "replace").splitlines()
    lines = [line for line in lines if line.strip()]
    return {"seconds": seconds, "cpu": usage.ru_utime + usage.ru_stime, "peak_mib": usage.ru_maxrss / 1024,
            "rc": child.returncode, "first_line": lines[0] if lines else "", "lines": lines}


def report(label: str, argv, before: Path = None, module_argv=None) -> dict:
    result = measure(argv)
    print(f"{label}: {result['seconds']:.1f} s ({result['cpu']:.1f} s CPU), peak RSS {result['peak_mib']:.0f} MiB, "
          f"exit {result['rc']}")
    print(f"  result: {result['first_line'][:200]}")
    if module_argv:
        module = measure(module_argv)
        print(f"  the nccl_perf module itself: {module['seconds']:.1f} s ({module['cpu']:.1f} s CPU), peak RSS "
              f"{module['peak_mib']:.0f} MiB, exit {module['rc']}: {module_outcome(module['lines'])}")
    if before:
        old = measure(argv, before)
        print(f"  before ({before}): {old['seconds']:.1f} s ({old['cpu']:.1f} s CPU), peak RSS "
              f"{old['peak_mib']:.0f} MiB, exit {old['rc']}: {old['first_line'][:120]}")
        print(f"  after/before: CPU {result['cpu'] / old['cpu']:.2f}, "
              f"peak RSS {result['peak_mib'] / old['peak_mib']:.2f}")
    return result


def module_outcome(lines) -> str:
    """The module's verdict from the JSON it printed, or its first line."""
    try:
        facts = json.loads(next(line for line in lines if line.startswith("{")))["ansible_facts"]["nccl_perf"]
    except (StopIteration, ValueError, KeyError, TypeError):
        return (lines or ["no output"])[0][:160]
    return (f"passed {facts['passed']}, row_count {facts['row_count']}, {len(facts['rows'])} rows in the facts, "
            f"peak busbw {facts['peak_busbw_gbps']} GB/s")


def module_args(folder: Path, perf: Path) -> list:
    """argv running plugins/modules/nccl_perf.py on `perf` as Ansible would, from an args file."""
    args = folder / "nccl_perf_args.json"
    args.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {"path": str(perf), "max_size_mib": 1024,
                                                        "min_busbw_gbps": 1.0, "expected_ranks": 2}}))
    return [sys.executable, str(REPO / "plugins" / "modules" / "nccl_perf.py"), str(args)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--log-mb", type=int, default=100)
    parser.add_argument("--rows", type=int, default=400_000, help="rows for `ncclkit parse` (under 64 MiB)")
    parser.add_argument("--perf-rows", type=int, default=1_000_000, help="rows for the nccl_perf case")
    parser.add_argument("--keep", help="folder for the generated inputs (default: a temporary one)")
    parser.add_argument("--what", choices=("all", "diagnose", "parse", "perf"), default="all")
    parser.add_argument("--before", type=Path, metavar="TREE",
                        help="an older copy of this repository to measure too, in the same run")
    args = parser.parse_args(argv)
    if args.before and not (args.before / "collections").is_dir():
        parser.error(f"--before {args.before}: no collections/ folder there; give a copy of this repository")
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ncclkit-speed-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, "
          f"load average {' '.join(f'{load:.1f}' for load in os.getloadavg())}, Python {sys.version.split()[0]}")
    failed = False
    if args.what in ("all", "diagnose"):
        log = folder / "job.log"
        shape = write_log(log, args.log_mb)
        result = report(f"diagnose: {shape['bytes'] / 1048576:.0f} MiB, {shape['hosts']} hosts, {shape['ranks']} ranks",
                        [sys.executable, "-m", "ncclkit.cli", "diagnose", str(log)], args.before)
        failed |= result["rc"] != 1 or "rank_killed" not in result["first_line"]
    if args.what in ("all", "parse"):
        perf = folder / "perf.txt"
        size = write_perf(perf, args.rows)
        result = report(f"parse: {args.rows} rows ({size / 1048576:.0f} MiB)",
                        [sys.executable, "-m", "ncclkit.cli", "parse", str(perf)], args.before)
        failed |= result["rc"] != 0
    if args.what in ("all", "perf"):
        perf = folder / "perf-module.txt"
        size = write_perf(perf, args.perf_rows)
        result = report(f"nccl_perf: {args.perf_rows} rows ({size / 1048576:.0f} MiB)",
                        [sys.executable, "-c", PERF_WORK, str(perf)], args.before, module_args(folder, perf))
        failed |= result["rc"] != 0 or not result["first_line"].startswith("PASSED")
    print(f"load average after: {' '.join(f'{load:.1f}' for load in os.getloadavg())}")
    if not args.keep:
        for path in folder.iterdir():
            path.unlink()
        folder.rmdir()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
