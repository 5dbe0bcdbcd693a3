"""Issue 28's goals for `ncclkit launch`, measured on lab clusters (root; lab indices 72 and 73).

    python benchmarks/launch_goals.py scale [--nodes 2 16] [--job-s 30]
        the controller's CPU (every process launch starts, ssh's ControlMaster connections included,
        counted by a cpuacct cgroup of their own) and the time until every host's launcher started,
        for a job of --job-s seconds: a stand-in launcher (a Python script that starts the script as
        torchrun would, one rank per host) and a sleeping rank; --no-check.
    python benchmarks/launch_goals.py lightning [--nodes 2] [--healthy 10] [--healthy-s 300]
                                                [--failures 3] [--stall-after 60]
        on a lab of --nodes nodes with the NCCL profile: healthy Lightning jobs over Gloo with a
        checkpoint on rank 0 and a validation pass, each longer than --stall-after, the training
        steps filling the job to about --healthy-s seconds (0: six steps) (false alarms counted),
        then rank exceptions (named after the rank's exit) and SIGSTOPped ranks (named after the stop).

Prints one JSON line per run and a summary; docs/benchmarks.md has the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO_ROOT / "src"), str(REPO_ROOT / "tests")]

from lab_indices import LAB_INDICES  # noqa: E402

from ncclkit.lab import Lab  # noqa: E402

INDICES = LAB_INDICES["benchmarks/launch_goals.py (as docs/benchmarks.md runs it: 2 and 16 nodes)"]
CGROUP = Path("/sys/fs/cgroup/cpuacct")
STAND_IN = """#!{python}
import os, sys
args = sys.argv[1:]
options = {{}}
while args and args[0].startswith("--"):
    options[args[0]] = args[1]
    args = args[2:]
os.environ.update(RANK=options["--node-rank"], LOCAL_RANK="0", WORLD_SIZE=options["--nnodes"], LOCAL_WORLD_SIZE="1")
os.execv(sys.executable, [sys.executable] + args)
"""
EVENT = re.compile(r"launch-job rank=(?P<rank>\d+) event=(?P<event>\w+) t=(?P<t>[\d.]+)")


def run_launch(inventory: Path, folder: Path, options: list[str], argv: list[str], cgroup: Path | None = None):
    """`ncclkit launch --json`; (launch.json, wall seconds, controller CPU seconds or None)."""
    def enter():
        if cgroup:
            (cgroup / "cgroup.procs").write_text(str(os.getpid()))

    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "ncclkit", "launch", "-i", str(inventory), "--report-parent",
                           str(folder), "--json", *options, "--", *argv], capture_output=True, text=True,
                          cwd=REPO_ROOT, env={**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")}, preexec_fn=enter,
                          timeout=600, check=False)
    wall = time.monotonic() - started
    if not done.stdout.strip():
        raise SystemExit(f"launch printed nothing (rc {done.returncode}): {done.stderr[-2000:]}")
    cpu = None
    if cgroup:
        time.sleep(1)  # the ControlMaster connections exit after `-O exit`
        cpu = int((cgroup / "cpuacct.usage").read_text()) / 1e9
    return json.loads(done.stdout), wall, cpu


def lab_inventory(lab: Lab, folder: Path, extra_vars: dict) -> Path:
    document = yaml.safe_load(lab.inventory_path.read_text())
    document["cluster"].setdefault("vars", {}).update(extra_vars)
    path = folder / "hosts.yml"
    path.write_text(yaml.safe_dump(document))
    return path


def scale(args) -> None:
    rows = []
    work = Path(tempfile.mkdtemp(prefix=".launch-bench-", dir=REPO_ROOT / "benchmarks"))  # seen by the nodes
    try:
        launcher = work / "launcher"
        launcher.write_text(STAND_IN.format(python=sys.executable))
        launcher.chmod(0o755)
        (work / "job.py").write_text(f"import time\nprint('up', flush=True)\ntime.sleep({args.job_s})\n")
        for nodes, index in zip(args.nodes, INDICES, strict=False):
            lab = Lab(index)
            lab.down()
            assert lab.up(nodes=nodes, inventory_path=work / f"lab{index}.yml") is True
            try:
                inventory = lab_inventory(lab, work, {"ncclkit_launch_torchrun": str(launcher),
                                                      "ansible_python_interpreter": sys.executable})
                for repeat in range(args.repeats):
                    cgroup = CGROUP / f"ncclkit-launch-bench-{os.getpid()}-{nodes}-{repeat}"
                    cgroup.mkdir()
                    try:
                        document, wall, cpu = run_launch(inventory, work / "runs", ["--no-check"],
                                                         [str(work / "job.py")], cgroup)
                    finally:
                        cgroup.rmdir()
                    row = {"nodes": nodes, "repeat": repeat, "exit_code": document["exit_code"],
                           "launchers_started_s": document["timings_s"]["launchers started"],
                           "probed_s": document["timings_s"].get("probed"), "wall_s": round(wall, 2),
                           "controller_cpu_s": round(cpu, 3), "job_s": args.job_s}
                    print(json.dumps(row), flush=True)
                    rows.append(row)
            finally:
                lab.down()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    by = {n: [r for r in rows if r["nodes"] == n] for n in args.nodes}
    low, high = min(args.nodes), max(args.nodes)
    cpu = {n: statistics.median(r["controller_cpu_s"] for r in by[n]) for n in by}
    start = {n: statistics.median(r["launchers_started_s"] for r in by[n]) for n in by}
    print(json.dumps({"summary": "scale", "median_cpu_s": cpu, "median_launchers_started_s": start,
                      "cpu_per_added_host_s": round((cpu[high] - cpu[low]) / (high - low), 3),
                      "start_ratio": round(start[high] / start[low], 2)}))


def lightning(args) -> None:
    lab = Lab(INDICES[0])
    work = Path(tempfile.mkdtemp(prefix="launch-bench-"))
    lab.down()
    assert lab.up(nodes=args.nodes, inventory_path=work / "hosts.yml") is True
    nodes = [f"node{number}" for number in range(1, args.nodes + 1)]
    pause_s = args.stall_after + 4  # the checkpoint and the validation pass: each longer than --stall-after
    # Training steps and the start (about 15 s) fill the rest of --healthy-s. Lightning's sampler gives
    # each of the N ranks 1/N of the --steps batches, of about 0.3 s each.
    steps = max(6, int((args.healthy_s - 2 * pause_s - 15) / 0.3 * args.nodes)) if args.healthy_s else 6
    results = {"healthy": [], "exception": [], "sigstop": []}
    try:
        played = subprocess.run([str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(lab.inventory_path),
                                 str(REPO_ROOT / "tests" / "roles" / "nccl_profile" / "playbook.yml"), "-e",
                                 json.dumps({"nccl_profile_python": sys.executable})], capture_output=True, text=True,
                                cwd=REPO_ROOT, env={**os.environ, "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg")},
                                check=False)
        assert played.returncode == 0, played.stdout[-2000:]
        job = "tests/lab/launch_job.py"
        plans = ([("healthy", ["--steps", str(steps), "--checkpoint-s", str(pause_s),
                               "--validate-s", str(pause_s)], [])] * args.healthy
                 + [("exception", ["--fail-rank", "1", "--fail-step", "2", "--steps", "40"], [])] * args.failures
                 + [("sigstop", ["--stop-rank", "1", "--stop-step", "2", "--steps", "40"], ["--stop-on-hang"])]
                 * args.failures)
        for number, (kind, job_args, options) in enumerate(plans):
            events_file = f"/tmp/launch-bench-events-{os.getpid()}-{number}.txt"
            document, wall, dummy = run_launch(
                lab.inventory_path, work / "runs", ["--no-check", "--stall-after", str(args.stall_after),
                                                    "--chdir", str(REPO_ROOT),
                                                    "--timeout", str(int(max(300, 2 * args.healthy_s))), *options],
                [job, "--events", events_file, *job_args])
            events = {}
            for node in nodes:
                text = lab.exec(node, ["cat", events_file], capture_output=True, text=True).stdout
                for match in EVENT.finditer(text):
                    events[(int(match["rank"]), match["event"])] = float(match["t"]) - document["started_at"]
            timings = document["timings_s"]
            first = document["findings"][0] if document["findings"] else {}
            row = {"kind": kind, "nodes": args.nodes, "exit_code": document["exit_code"], "wall_s": round(wall, 1),
                   "code": first.get("code"), "host": first.get("host"), "rank": first.get("rank"),
                   "false_alarm": kind == "healthy" and any(f["code"] == "hang_in_collective"
                                                            for f in document["findings"]),
                   "left": sum(len((h.get("stopped") or {}).get("left") or []) for h in document["hosts"])}
            if kind == "exception" and (1, "exit") in events:
                row["named_after_exit_s"] = round(timings["named"] - events[(1, "exit")], 2)
                row["stopped_after_exit_s"] = round(timings["stopped"] - events[(1, "exit")], 2)
            if kind == "sigstop" and (1, "sigstop") in events:
                row["named_after_stop_s"] = round(timings["named"] - events[(1, "sigstop")], 2)
            if kind == "healthy" and (0, "checkpoint") in events and (0, "done") in events:
                row["checkpoint_s"] = round(events[(0, "done")] - events[(0, "checkpoint")], 1)
            print(json.dumps(row), flush=True)
            results[kind].append(row)
    finally:
        lab.down()
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps({"summary": "lightning", "nodes": args.nodes, "stall_after_s": args.stall_after,
                      "healthy_runs": len(results["healthy"]),
                      "false_alarms": sum(r["false_alarm"] for r in results["healthy"]),
                      "healthy_exit_0": sum(r["exit_code"] == 0 for r in results["healthy"]),
                      "named_after_exit_s": [r.get("named_after_exit_s") for r in results["exception"]],
                      "stopped_after_exit_s": [r.get("stopped_after_exit_s") for r in results["exception"]],
                      "named_after_stop_s": [r.get("named_after_stop_s") for r in results["sigstop"]],
                      "left": sum(r["left"] for rows in results.values() for r in rows)}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    one = sub.add_parser("scale")
    one.add_argument("--nodes", type=int, nargs=2, default=[2, 16])
    one.add_argument("--job-s", type=float, default=30)
    one.add_argument("--repeats", type=int, default=2)
    two = sub.add_parser("lightning")
    two.add_argument("--nodes", type=int, default=2)
    two.add_argument("--healthy", type=int, default=10)
    two.add_argument("--healthy-s", type=float, default=0, help="a healthy job's length (0: six steps)")
    two.add_argument("--failures", type=int, default=3)
    two.add_argument("--stall-after", type=int, default=8)
    args = parser.parse_args()
    scale(args) if args.what == "scale" else lightning(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
