"""nccl_validate on hosts without GPU (lab 40, after the profile): a Gloo all-reduce across the
nodes through each node's ncclkit-torchrun. A healthy lab passes with a measured bandwidth; a rank
stopped (SIGSTOP) mid-run is caught by the timeout with its evidence taken before the kill, and a
rank killed (SIGKILL) fails the run; both name the rank and its host.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import REPO_ROOT

pytestmark = [pytest.mark.lab, pytest.mark.slow]

PLAYBOOK = Path(__file__).parent / "playbooks" / "validate_gloo.yml"


def start(lab, workdir: Path, **extra) -> subprocess.Popen:
    workdir.mkdir(parents=True, exist_ok=True)
    variables = {"nccl_profile_python": sys.executable, "nccl_validate_gloo_bytes": 4 << 20, **extra}
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"), "PWD": str(workdir),
           "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_DEPRECATION_WARNINGS": "0"}
    return subprocess.Popen([str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(lab.inventory_path),
                             str(PLAYBOOK), "-e", json.dumps(variables)], cwd=workdir, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def finish(play: subprocess.Popen, workdir: Path, timeout: float = 400) -> tuple[int, str, dict]:
    out, dummy = play.communicate(timeout=timeout)
    folders = sorted((workdir / "ncclkit-report").glob("2*"))
    assert len(folders) == 1, out[-3000:]
    report = json.loads((folders[0] / "report.json").read_text())
    return play.returncode, " ".join(out.replace("''", "'").split()), report


def rank_pid(rank: int, limit_s: float = 400) -> int:
    """The Gloo rank's process (the lab's nodes share this machine's process table), once it runs."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        for entry in filter(str.isdigit, os.listdir("/proc")):
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
                environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"gloo_allreduce.py" in cmdline and b"torch.distributed.run" not in cmdline \
                    and f"RANK={rank}".encode() in environ:
                return int(entry)
        time.sleep(0.5)
    raise AssertionError(f"no Gloo rank {rank} within {limit_s} s")


def wait_until_ready(lab, node: str, limit_s: float = 300) -> None:
    """Until the node's rank has joined the process group: what follows is in the all-reduces."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        done = lab.exec(node, ["sh", "-c", "cat /tmp/ncclkit-validate-*/gloo.txt 2>/dev/null"],
                        capture_output=True, text=True, timeout=30)
        if "process group ready" in done.stdout:
            return
        time.sleep(0.5)
    raise AssertionError(f"the Gloo rank on {node} did not join within {limit_s} s")


def gloo_run(report: dict) -> dict:
    runs = [run for run in report["runs"] if run["name"] == "gloo"]
    assert len(runs) == 1, report["runs"]
    return runs[0]


def test_a_healthy_lab_passes_with_the_gloo_bandwidth_and_says_nccl_was_not_exercised(lab, tmp_path):
    rc, said, report = finish(start(lab, tmp_path), tmp_path)
    assert rc == 0, said[-3000:]
    assert "nccl_validate PASSED: 1 run(s), 1 passed (Gloo/CPU: NCCL not exercised; GPU checks skipped" in said
    run = gloo_run(report)
    assert run["passed"] and run["rc"] == 0 and run["title"] == "Gloo all-reduce across node1, node2"
    assert run["perf"]["ranks"] == 2 and run["perf"]["hosts"] == ["node1", "node2"]
    assert run["perf"]["peak_busbw_gbps"] > 0 and run["perf"]["bytes"] == 4 << 20
    assert run["command"][0] == "/opt/ncclkit/bin/ncclkit-torchrun"
    assert sorted(run["raw"]) == ["raw/node1/gloo.stderr.txt", "raw/node1/gloo.txt",
                                  "raw/node2/gloo.stderr.txt", "raw/node2/gloo.txt"]


def signalled_run(lab, tmp_path, sig: int, timeout_s: int) -> tuple[int, str, dict]:
    """A Gloo run that would go on for hours, with `sig` sent to rank 1 (node2) once it has joined:
    (its pid, the play's output, the run's record). The play fails."""
    play = start(lab, tmp_path, nccl_validate_gloo_iters=1000000, nccl_validate_timeout_s=timeout_s)
    pid = rank_pid(1)
    wait_until_ready(lab, "node2")
    os.kill(pid, sig)
    rc, said, report = finish(play, tmp_path)
    assert rc != 0
    return pid, said, gloo_run(report)


def test_a_stopped_rank_is_caught_by_the_timeout_with_its_evidence(lab, tmp_path):
    stopped, said, run = signalled_run(lab, tmp_path, signal.SIGSTOP, 30)
    assert run["timed_out"] and not run["passed"]
    stopped_line = f"rank=1 host=node2 pid={stopped} state=T (stopped)"
    assert any(stopped_line in line for line in run["forensics"]), run["forensics"]
    assert "Gloo all-reduce across node1, node2: the Gloo all-reduce did not finish within 30 s" in said
    # The evidence names it: both ranks joined, so the network worked, and rank 1 is stopped.
    found = [(f["code"], f["host"], f["rank"], f["cause"][:300]) for f in run["diagnosis"]["findings"]]
    assert "hang in a collective" in run["reasons"][0], (run["reasons"], found)
    assert "suspect: rank 1 on node2: its process is stopped" in run["reasons"][0], (run["reasons"], found)
    assert run["diagnosis"]["findings"][0]["code"] == "hang_in_collective"


def test_a_killed_rank_fails_the_run(lab, tmp_path):
    dummy, dummy, run = signalled_run(lab, tmp_path, signal.SIGKILL, 90)
    # Rank 0 usually fails at once on the closed connection; on a loaded machine it has also sat
    # in the all-reduce until the timeout. Either way the death is the root cause.
    assert not run["passed"] and run["rc"] != 0
    # torchrun on node2 reports its rank's death; what rank 0 does after follows from it.
    root = run["diagnosis"]["findings"][0]
    assert (root["code"], root["rank"], root["host"]) == ("rank_killed", 1, "node2"), run["diagnosis"]
    assert "killed by signal 9" in run["reasons"][0] and "rank 1" in run["reasons"][0], run["reasons"]
