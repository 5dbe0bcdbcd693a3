"""`ncclkit launch` on a 2-node lab cluster (one lab for the module) with the NCCL profile written
(nccl_preflight + nccl_profile, as site.yml runs them), a Lightning job over Gloo (launch_job.py)
started with each node's /opt/ncclkit/bin/ncclkit-torchrun over SSH:

- a rank's exception: named (host, rank, the exception quoted) within 5 s of the raise, every rank
  stopped within 15 s;
- a rank that stops itself (SIGSTOP): named within --stall-after + 15 s (--stall-after 8 here);
- after both: no process of the job left, the double-forked sleeper and DataLoader workers included;
- a healthy job whose rank 0 writes a checkpoint, and whose validation pass, each take longer than
  --stall-after: never called stalled, exit 0, with the `ncclkit check` pre-check run first.
Marked `lab` (root) and `slow`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lab_indices import lab_index
from lab_playbook import lab_cluster, play

pytestmark = [pytest.mark.lab, pytest.mark.slow]

REPO_ROOT = Path(__file__).resolve().parents[2]
INDEX = lab_index(__file__)
PROFILE_PLAYBOOK = REPO_ROOT / "tests" / "roles" / "nccl_profile" / "playbook.yml"
JOB = "tests/lab/launch_job.py"
STALL_AFTER = 8
EVENT = re.compile(r"launch-job rank=(?P<rank>\d+) event=(?P<event>\w+)(?: pid=(?P<pid>\d+))?(?: t=(?P<t>[\d.]+))?")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    started = time.monotonic()
    for lab in lab_cluster(INDEX, tmp_path_factory.mktemp(f"lab{INDEX}"), nodes=2):
        done = play(lab.inventory_path, str(PROFILE_PLAYBOOK), {"nccl_profile_python": sys.executable})
        assert done.rc == 0, done.stdout[-3000:]
        print(f"\nlab up + profile: {time.monotonic() - started:.1f} s")
        yield lab


def launch(lab, folder: Path, *job_args: str, options=("--no-check",)) -> tuple[int, dict, dict]:
    """`ncclkit launch --json` as a user runs it; (exit code, launch.json, events per (rank, event))."""
    events_file = folder / "events.txt"
    argv = [sys.executable, "-m", "ncclkit", "launch", "-i", str(lab.inventory_path), "--report-parent", str(folder),
            "--stall-after", str(STALL_AFTER), "--timeout", "150", "--chdir", str(REPO_ROOT), "--json", *options,
            "--", JOB, "--events", str(events_file), *job_args]
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=240, cwd=REPO_ROOT, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")})
    print(f"launch {' '.join(job_args) or '(healthy)'}: {time.monotonic() - started:.1f} s, rc {done.returncode}")
    assert done.stdout.strip(), done.stderr[-3000:]
    document = json.loads(done.stdout)
    events, lines = {}, []
    for node in ("node1", "node2"):  # each node writes /tmp into its own overlay: read it there
        lines += lab.exec(node, ["cat", str(events_file)], capture_output=True, text=True).stdout.splitlines()
    for line in lines:
        match = EVENT.search(line)
        if match:
            events[(int(match["rank"]), match["event"])] = float(match["t"]) if match["t"] else int(match["pid"])
    return done.returncode, document, events


def job_processes(launch_id: str) -> list[int]:
    """Every process of the machine whose environment carries the launch's marker (the lab's nodes
    share this machine's PID namespace)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            env = Path(f"/proc/{entry}/environ").read_bytes() if entry.isdigit() else b""
        except OSError:
            continue
        if f"NCCLKIT_LAUNCH_ID={launch_id}".encode() in env.split(b"\0"):
            found.append(int(entry))
    return found


def running(pid: int) -> bool:
    """Whether pid is a process that still runs (an exited one waiting for init to reap it does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


def assert_nothing_left(document: dict, events: dict) -> None:
    assert [pid for pid in job_processes(document["launch_id"]) if running(pid)] == []
    for (rank, event), pid in events.items():
        if event == "sleeper":
            assert not running(pid), f"rank {rank}'s double-forked child {pid} is still there"
    assert all(host["stopped"] and host["stopped"]["left"] == [] for host in document["hosts"])


def test_rank_exception_named_and_everything_stopped(lab, tmp_path):
    rc, document, events = launch(lab, tmp_path, "--fail-rank", "1", "--fail-step", "2", "--steps", "40")
    assert rc == 1, document["verdict"]
    first = document["findings"][0]
    assert (first["code"], first["host"], first["rank"]) in (("rank_failed", "node2", 1),
                                                             ("rank_exception", "node2", 1))
    assert "ValueError: bad batch at step 2" in first["cause"]
    raised = events[(1, "raise")] - document["started_at"]
    exited = events[(1, "exit")] - document["started_at"]
    timings = document["timings_s"]
    print(f"rank 1 exited {exited - raised:.1f} s after its raise; named {timings['named'] - exited:.1f} s after "
          f"its exit, every rank stopped {timings['stopped'] - exited:.1f} s after it")
    assert timings["named"] - exited <= 5
    assert timings["stopped"] - exited <= 15
    assert document["verdict"].startswith("FAILED: ")
    assert_nothing_left(document, events)


def test_stopped_rank_named_within_stall_after(lab, tmp_path):
    rc, document, events = launch(lab, tmp_path, "--stop-rank", "1", "--stop-step", "2", "--steps", "40",
                                  options=("--no-check", "--stop-on-hang"))
    assert rc == 1, document["verdict"]
    first = document["findings"][0]
    assert (first["code"], first["host"], first["rank"]) == ("hang_in_collective", "node2", 1), first
    assert "stopped" in first["cause"]
    stopped_at = events[(1, "sigstop")] - document["started_at"]
    named_after = document["timings_s"]["named"] - stopped_at
    print(f"named {named_after:.1f} s after SIGSTOP (--stall-after {STALL_AFTER})")
    assert named_after <= STALL_AFTER + 15
    node2 = next(host for host in document["hosts"] if host["name"] == "node2")
    # torchrun, the rank, its 2 DataLoader workers and the double-forked sleeper, at least.
    assert len(node2["stopped"]["found"]) >= 5, node2["stopped"]
    assert (1, "sleeper") in events
    assert_nothing_left(document, events)


def test_healthy_job_with_long_checkpoint_and_validation_is_not_stalled(lab, tmp_path):
    rc, document, events = launch(lab, tmp_path, "--steps", "6", "--checkpoint-s", str(STALL_AFTER + 4),
                                  "--validate-s", str(STALL_AFTER + 4), options=())
    assert rc == 0, (document["verdict"], document["findings"])
    assert document["verdict"].startswith("SUCCEEDED")
    assert not [f for f in document["findings"] if f["code"] == "hang_in_collective"]
    assert "checked" in document["timings_s"]     # the pre-check ran
    assert (0, "checkpoint") in events and (1, "validation") in events
    assert events[(0, "done")] - events[(0, "checkpoint")] > STALL_AFTER
    assert_nothing_left(document, events)
