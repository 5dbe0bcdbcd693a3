#!/usr/bin/env python
"""The fault matrix: how often `ncclkit check` predicts a fault and `ncclkit diagnose` names it.

Run as root from the checkout (the shared venv's python):
    python benchmarks/fault_matrix.py [--index 62] [--nodes 2] [--kinds K ...] [--healthy 10]
                                      [--repeat 1] [--corpus tests/samples/failures] [--out FILE]

On lab K after site.yml (`ansible-playbook site.yml -i <lab inventory> -e nccl_profile_python=...`,
as `make demo` runs it), for each kind: inject (`ncclkit lab fault inject`, parameters drawn at random
and recorded); `ncclkit check`; a bounded real job (benchmarks/fault_job.py: Lightning DDP over Gloo,
60 s process-group timeout, started with /opt/ncclkit/bin/ncclkit-torchrun on every node over ssh,
one log per node); `ncclkit diagnose` on those logs; clear; `ncclkit check` again (READY?). Healthy
runs (no fault) count false alarms. Each run's logs go into the corpus (<kind>-<n>/, expected.json:
what is TRUE, from the fault and what the job did, never from what diagnose said). Results are JSON
(benchmarks/results/fault_matrix.json, runs appended) and the table of docs/diagnosis.md is made by
--table. One lab for all kinds: clear + a READY check is what shows the next run starts clean.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from ncclkit.lab import Lab, netns  # noqa: E402
from ncclkit.lab.fault import KINDS  # noqa: E402

JOB = REPO / "benchmarks" / "fault_job.py"
RESULTS = REPO / "benchmarks" / "results" / "fault_matrix.json"
CORPUS = REPO / "tests" / "samples" / "failures"
TORCHRUN = "/opt/ncclkit/bin/ncclkit-torchrun"
JOB_LIMIT_S = 150        # the 60 s process-group timeout, the start, and room
GRACE_S = 20             # once one node's job ended in failure, the others get this long to follow
CASE_LIMIT = 250_000     # a corpus case stays under 256 KB; bigger logs are gzipped


def ncclkit(*argv: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), ANSIBLE_CONFIG=str(REPO / "ansible.cfg"))
    return subprocess.run([sys.executable, "-m", "ncclkit", *argv], env=env, cwd=REPO, capture_output=True,
                          text=True, check=False, timeout=timeout)


def site(inventory: Path) -> float:
    started = time.monotonic()
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    done = subprocess.run([str(Path(sys.executable).with_name("ansible-playbook")), "site.yml", "-i", str(inventory),
                           "-e", f"nccl_profile_python={sys.executable}"], cwd=REPO, env=env, capture_output=True,
                          text=True, check=False, timeout=1200)
    if done.returncode:
        raise SystemExit(f"site.yml failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-1000:]}")
    return time.monotonic() - started


def check(inventory: Path) -> dict:
    started = time.monotonic()
    done = ncclkit("check", "-i", str(inventory), "--json", timeout=300)
    seconds = time.monotonic() - started
    try:
        document = json.loads(done.stdout)
    except ValueError:
        return {"rc": done.returncode, "seconds": round(seconds, 1), "ready": False, "errors": [],
                "verdict": f"no JSON: {done.stderr.strip()[-300:]}"}
    return {"rc": done.returncode, "seconds": round(seconds, 1), "ready": document["ready"],
            "verdict": document["verdict"],
            "errors": [{"code": f["code"], "host": f["host"]} for f in document["findings"]
                       if f["severity"] == "error"]}


# ---- the job ------------------------------------------------------------------------------------
def _job_command(lab, node: str, hook: dict) -> str:
    """The job's command line on `node`: ncclkit-torchrun, or where the profile is gone (a re-imaged
    node), torchrun with the options the profile's launcher on the master gives."""
    env = {"PYTHONUNBUFFERED": "1", **hook}
    prefix = " ".join(f"{key}={shlex.quote(value)}" for key, value in env.items())
    has_launcher = lab.exec(node, ["test", "-x", TORCHRUN]).returncode == 0
    if has_launcher:
        return f"env {prefix} {TORCHRUN} {shlex.quote(str(JOB))}"
    names = [info.name for info in lab.nodes()]
    master = lab.node(names[0]).private_ip
    return (f"env {prefix} {shlex.quote(sys.executable)} -m torch.distributed.run --nnodes {len(names)} "
            f"--node-rank {names.index(node)} --master-addr {master} --master-port 29500 --nproc-per-node 1 "
            f"{shlex.quote(str(JOB))}")


def run_job(lab, folder: Path, hooks: dict, limit_s: float = JOB_LIMIT_S) -> dict:
    """The job on every node over ssh, logs in folder/<node>.log; ends when every node's job has
    ended, or GRACE_S after the first failure, or at limit_s (then the rest is killed: a hang)."""
    folder.mkdir(parents=True, exist_ok=True)
    running = {}
    started = time.monotonic()
    for info in lab.nodes():
        log = (folder / f"{info.name}.log").open("wb")
        argv = lab.ssh_command(info.name, [_job_command(lab, info.name, hooks.get(info.name, {}))])
        running[info.name] = (subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                               start_new_session=True), log)
    deadline, failed_at, codes = started + limit_s, None, {}
    while time.monotonic() < deadline:
        codes = {name: process.poll() for name, (process, dummy) in running.items()}
        if None not in codes.values():
            break
        if failed_at is None and any(code not in (None, 0) for code in codes.values()):
            failed_at = time.monotonic()
            deadline = min(deadline, failed_at + GRACE_S)
        time.sleep(0.2)
    ended = time.monotonic()
    killed = [name for name, code in codes.items() if code is None]
    for name in killed:
        _stop(lab, name, running[name][0])
    for process, log in running.values():
        process.wait(timeout=30)
        log.close()
    codes = {name: process.returncode for name, (process, dummy) in running.items()}
    return {"seconds": round(ended - started, 1), "exit": codes, "killed": killed, "ended": ended,
            "done": sorted(name for name in running if b"fault-job" in (folder / f"{name}.log").read_bytes()
                           and b": done: all-reduced" in (folder / f"{name}.log").read_bytes())}


def _stop(lab, node: str, process: subprocess.Popen) -> None:
    """End the job on a node: the processes in the node's namespace that run this job (its
    torchrun and workers, also a SIGSTOPped one), by pid; then the ssh."""
    info = lab.node(node)
    for pid in netns.namespace_pids([info.netns])[info.netns]:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as stream:
                if str(JOB).encode() in stream.read():
                    os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def observed_effect(job: dict, healthy_s: float | None) -> str:
    """hangs: nothing failed on its own before the matrix killed what was left; fails: a node's job
    ended with an error (a timeout's error included); slower: 1.5x the healthy runs' median."""
    own = [code for name, code in job["exit"].items() if name not in job["killed"]]
    if job["killed"] and all(code == 0 for code in own):
        return "hangs"
    if any(code != 0 for code in own):
        return "fails"
    if healthy_s and job["seconds"] > 1.5 * healthy_s:
        return "slower"
    return "none"


# ---- diagnose and the corpus -----------------------------------------------------------------------
def diagnose(files: list[Path], inventory: Path | None = None) -> dict:
    """diagnose's first finding on the logs; with the inventory, as `diagnose -i` gives it (the live check)."""
    started = time.monotonic()
    live = ["-i", str(inventory)] if inventory else []
    done = ncclkit("diagnose", "--json", *live, *map(str, files), timeout=180)
    seconds = time.monotonic() - started
    try:
        findings = json.loads(done.stdout).get("findings") or []
    except ValueError:
        findings = []
    first = findings[0] if findings else {}
    return {"rc": done.returncode, "seconds": round(seconds, 2), "code": first.get("code"),
            "host": first.get("host"), "rank": first.get("rank"), "severity": first.get("severity"),
            "cause": (first.get("cause") or "")[:300], "explained_by": first.get("explained_by") or []}


def right(verdict: dict, expected: dict, check_code: str | None = None) -> bool:
    """The first finding's code (or, with the live check, the check's code that explains it), host and rank."""
    code = verdict["code"] == expected["code"] or (
        expected["code"] is not None and check_code is not None and check_code in verdict.get("explained_by", []))
    return (code and (expected["host"] is None or verdict["host"] == expected["host"])
            and (expected["rank"] is None or verdict["rank"] == expected["rank"]))


def kernel_lines(since: float) -> str:
    """The kernel's OOM lines since `since` (epoch seconds; as `journalctl -k` shows them on the node)."""
    after = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(since - 1))
    done = subprocess.run(["dmesg", "-T", "--since", after], capture_output=True, text=True, check=False)
    lines = [line for line in done.stdout.splitlines()
             if any(word in line for word in ("oom", "Out of memory", "Killed process", "Memory cgroup"))]
    return "\n".join(lines[-20:]) + ("\n" if lines else "")


def truth(kind: str | None, record: dict | None, effect: str) -> dict:
    """expected.json: the fault's true root cause where the job broke, else healthy."""
    spec = KINDS.get(kind) if kind else None
    broke = effect in ("fails", "hangs")
    if not spec or not broke:
        return {"code": None, "host": None, "rank": None, "cause_has": [], "fix_has": [], "exit": 0,
                "class": "healthy"}
    node = record["node"]
    rank = int(node[len("node"):]) - 1 if spec.layer == "job" else None
    cause = {"rank_exception": ["ValueError", "fault hook: bad batch"]}.get(kind, [])
    return {"code": spec.diagnose, "host": node, "rank": rank, "cause_has": cause, "fix_has": [], "exit": 1,
            "class": spec.diagnose}


def header(log_name: str, expected: dict, index: int, nodes: int) -> bytes:
    """The first line every corpus log carries (tests/static/test_samples_sources.py)."""
    day = datetime.now(UTC).date().isoformat()
    what = ("the kernel's OOM lines (dmesg -T)" if log_name.startswith("kernel") else
            f"{log_name.split('.')[0]}'s ncclkit-torchrun benchmarks/fault_job.py over ssh")
    return (f"# recorded {day} on lab {index} ({nodes} nodes, after site.yml) by benchmarks/fault_matrix.py: {what}; "
            f"{expected['shape_from'].removeprefix('lab: ')}\n").encode()


def save_case(corpus: Path, name: str, folder: Path, expected: dict, index: int, nodes: int) -> Path:
    number = 1
    while (corpus / f"{name}-{number}").exists():
        number += 1
    case = corpus / f"{name}-{number}"
    case.mkdir(parents=True)
    for log in sorted(folder.iterdir()):
        data = header(log.name, expected, index, nodes) + log.read_bytes()
        if len(data) > CASE_LIMIT // 3:
            (case / (log.name + ".gz")).write_bytes(gzip.compress(data, 9))
        else:
            (case / log.name).write_bytes(data)
    (case / "expected.json").write_text(json.dumps(expected, indent=2) + "\n")
    return case


# ---- one run ---------------------------------------------------------------------------------------
def one_run(lab, inventory: Path, kind: str | None, corpus: Path | None, healthy_s: float | None,
            seed: int | None = None) -> dict:
    row = {"kind": kind or "healthy", "at": datetime.now(UTC).isoformat(timespec="seconds")}
    record = None
    if kind:
        done = ncclkit("lab", "fault", "inject", kind, "--index", str(lab.index), "--json",
                       *(["--seed", str(seed)] if seed is not None else []))
        if done.returncode:
            return row | {"error": f"inject failed: {done.stderr.strip()}"}
        record = json.loads(done.stdout)
        row.update(node=record["node"], seed=record["seed"], params=record["params"])
    spec = KINDS.get(kind) if kind else None
    row["check"] = check(inventory)
    with tempfile.TemporaryDirectory(prefix="ncclkit-fault-") as tmp:
        folder = Path(tmp) / "logs"
        hooks = {record["node"]: record["hook"]} if record and record["hook"] else {}
        job_started = time.time()
        job = run_job(lab, folder, hooks)
        if kind == "rank_oom_killed":
            (folder / "kernel.log").write_text(kernel_lines(job_started))
        verdict = diagnose(sorted(folder.iterdir()))
        row["verdict_s"] = round(time.monotonic() - job["ended"], 1)
        # The same logs with the cluster's live check (diagnose -i), before the fault is cleared.
        row["diagnose_live"] = diagnose(sorted(folder.iterdir()), inventory)
        effect = observed_effect(job, healthy_s)
        expected = truth(kind, record, effect)
        expected["shape_from"] = (f"lab: ncclkit lab fault inject {kind} --node {record['node']} "
                                  f"--seed {record['seed']}" if record
                                  else "lab: healthy run of benchmarks/fault_job.py after site.yml")
        if corpus:
            case = save_case(corpus, kind or "healthy", folder, expected, lab.index, len(lab.nodes()))
            row["case"] = str(case.relative_to(REPO) if case.is_relative_to(REPO) else case)
    row["job"] = {key: job[key] for key in ("seconds", "exit", "killed", "done")} | {"effect": effect}
    row["diagnose"] = verdict
    row["expected"] = {"effect": spec.effect if spec else "none", "check": spec.check if spec else None,
                       "diagnose": expected["code"], "host": expected["host"], "rank": expected["rank"]}
    errors = {e["code"] for e in row["check"]["errors"]}
    row["check_predicted"] = (not row["check"]["ready"]) if spec and spec.layer != "job" and spec.effect in (
        "fails", "hangs") else None
    row["check_code_right"] = (spec.check in errors or spec.check in row["check"]["verdict"]) if spec and spec.check \
        else None
    row["false_alarm"] = (not row["check"]["ready"]) if not kind else None
    row["diagnose_right"] = right(verdict, expected)
    row["diagnose_live_right"] = right(row["diagnose_live"], expected, spec.check if spec else None)
    if kind:
        done = ncclkit("lab", "fault", "clear", "--index", str(lab.index))
        row["cleared"] = done.returncode == 0
        after = check(inventory)
        row["ready_after_clear"] = after["ready"]
        if not after["ready"]:
            row["after_clear"] = after
    return row


def table(rows: list[dict]) -> str:
    """The Markdown table of docs/diagnosis.md's "Fault matrix" section."""
    lines = ["| kind | runs | effect expected / seen | check expected | check predicted | diagnose expected "
             "| diagnose first (right) | with -i (right) | verdict s (with -i) | READY after clear |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    by_kind: dict[str, list] = {}
    for row in rows:
        if "error" not in row:
            by_kind.setdefault(row["kind"], []).append(row)
    for kind, runs in by_kind.items():
        seen = sorted({observed_effect(r["job"], None) if r["job"]["killed"] else r["job"]["effect"] for r in runs})
        predicted = [r["check_predicted"] for r in runs if r.get("check_predicted") is not None]
        alarms = [r["false_alarm"] for r in runs if r.get("false_alarm") is not None]
        check_cell = (f"{sum(predicted)}/{len(predicted)}" if predicted
                      else f"{sum(alarms)} false alarm(s)" if alarms else "-")
        firsts = ", ".join(sorted({_first(r["diagnose"]) for r in runs}))
        good = sum(r["diagnose_right"] for r in runs)
        live_runs = [r for r in runs if "diagnose_live" in r]
        live = ", ".join(sorted({_first(r["diagnose_live"]) for r in live_runs}))
        live_right = sum(r["diagnose_live_right"] for r in live_runs)
        live_cell = f"{live} ({live_right}/{len(live_runs)})" if live_runs else "-"
        live_s = max((r["diagnose_live"]["seconds"] for r in live_runs), default=None)
        cleared = [r["ready_after_clear"] for r in runs if "ready_after_clear" in r]
        lines.append(f"| {kind} | {len(runs)} | {runs[0]['expected']['effect']} / {', '.join(seen)} "
                     f"| {runs[0]['expected']['check'] or '-'} | {check_cell} "
                     f"| {runs[0]['expected']['diagnose'] or 'none'} | {firsts} ({good}/{len(runs)}) | {live_cell} "
                     f"| {max(r['verdict_s'] for r in runs)}{f' ({live_s})' if live_s is not None else ''} | "
                     f"{f'{sum(cleared)}/{len(cleared)}' if cleared else '-'} |")
    return "\n".join(lines)


def _first(verdict: dict) -> str:
    rank = verdict["rank"] if verdict["rank"] is not None else "-"
    return f"{verdict['code'] or 'none'}@{verdict['host'] or '-'}/{rank}"


def summary(rows: list[dict]) -> dict:
    rows = [r for r in rows if "error" not in r]
    pre = [r["check_predicted"] for r in rows if r.get("check_predicted") is not None]
    alarms = [r["false_alarm"] for r in rows if r.get("false_alarm") is not None]
    faulted = [r["diagnose_right"] for r in rows if r["kind"] != "healthy" and r["expected"]["diagnose"]]
    live = [r["diagnose_live_right"] for r in rows
            if r["kind"] != "healthy" and r["expected"]["diagnose"] and "diagnose_live_right" in r]
    cleared = [r["ready_after_clear"] for r in rows if "ready_after_clear" in r]
    return {"check_predicted": f"{sum(pre)}/{len(pre)}", "false_alarms": f"{sum(alarms)}/{len(alarms)}",
            "diagnose_right_on_broken_jobs": f"{sum(faulted)}/{len(faulted)}",
            "diagnose_right_all": f"{sum(r['diagnose_right'] for r in rows)}/{len(rows)}",
            "diagnose_live_right_on_broken_jobs": f"{sum(live)}/{len(live)}" if live else None,
            "verdict_s_max": max((r["verdict_s"] for r in rows), default=None),
            "ready_after_clear": f"{sum(cleared)}/{len(cleared)}"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=int, default=62)
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--kinds", nargs="*", help="kinds to run (default: every kind that is not NCCL-only)")
    parser.add_argument("--healthy", type=int, default=10, help="healthy runs (no fault)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--keep", action="store_true", help="use the lab if it is up (site.yml already run)")
    parser.add_argument("--table", action="store_true", help="only print the table and summary of --out")
    args = parser.parse_args()
    document = json.loads(args.out.read_text()) if args.out.exists() else {"runs": []}
    if args.table:
        print(table(document["runs"]))
        print(json.dumps(summary(document["runs"]), indent=2))
        return
    lab = Lab(args.index)
    kinds = args.kinds if args.kinds is not None else [k for k, spec in KINDS.items() if not spec.nccl_only]
    with tempfile.TemporaryDirectory(prefix="ncclkit-matrix-") as tmp:
        inventory = Path(tmp) / "hosts.yml"
        if not args.keep:
            lab.down()
        lab.up(nodes=args.nodes, inventory_path=inventory)
        inventory = lab.inventory_path
        document.setdefault("setup", []).append({"site_s": round(site(inventory), 1), "nodes": args.nodes,
                                                 "at": datetime.now(UTC).isoformat(timespec="seconds")})
        healthy_times = [r["job"]["seconds"] for r in document["runs"] if r["kind"] == "healthy" and "job" in r]
        plan = ["healthy"] * args.healthy + [k for k in kinds for dummy in range(args.repeat)]
        try:
            for kind in plan:
                healthy_s = sorted(healthy_times)[len(healthy_times) // 2] if healthy_times else None
                row = one_run(lab, inventory, None if kind == "healthy" else kind, args.corpus, healthy_s)
                if kind == "healthy" and "job" in row:
                    healthy_times.append(row["job"]["seconds"])
                document["runs"].append(row)
                args.out.parent.mkdir(parents=True, exist_ok=True)
                args.out.write_text(json.dumps(document, indent=1) + "\n")
                print(json.dumps({k: row.get(k) for k in ("kind", "node", "check_predicted", "false_alarm",
                                                          "diagnose_right", "verdict_s", "ready_after_clear")}
                                 | {"first": row.get("diagnose", {}).get("code"), "effect": row.get("job", {}).get(
                                     "effect")}), flush=True)
        finally:
            ncclkit("lab", "fault", "clear", "--index", str(args.index))
            if not args.keep:
                lab.down()
    document["summary"] = summary(document["runs"])
    args.out.write_text(json.dumps(document, indent=1) + "\n")
    print(table(document["runs"]))
    print(json.dumps(document["summary"], indent=2))


if __name__ == "__main__":
    main()
