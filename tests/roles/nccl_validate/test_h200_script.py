"""benchmarks/h200_validate.sh: shell syntax, and its whole single-node path on this machine with
a stand-in nvidia-smi and all_reduce_perf (connection local), as the lead runs it on the H200."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
SCRIPT = REPO_ROOT / "benchmarks" / "h200_validate.sh"
SAMPLES = REPO_ROOT / "tests" / "samples"
ONE_GPU = SAMPLES / "h200-1gpu-all_reduce_perf.txt"
TWO_HOSTS = SAMPLES / "h200-2host-socket-defaults.txt"
NVIDIA_SMI = """#!/bin/sh
echo "0, NVIDIA H200, 9.0, 580.65.06, 143771, 00000000:00:06.0"
"""


def test_the_script_parses_and_refuses_a_missing_folder():
    assert subprocess.run(["bash", "-n", str(SCRIPT)], check=False).returncode == 0
    done = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, check=False)
    assert done.returncode == 2 and "usage:" in done.stderr


def test_the_single_node_path_runs_end_to_end_with_stand_ins(tmp_path):
    bin_dir = tmp_path / "nccl-tests" / "build"
    bin_dir.mkdir(parents=True)
    shutil.copy(REPO_ROOT / "tests" / "roles" / "nccl_validate" / "standin.sh", bin_dir / "all_reduce_perf")
    shutil.copy(ONE_GPU, bin_dir / "single.txt")
    shutil.copy(SAMPLES / "h200-1gpu-all_reduce_perf.json", bin_dir / "single.json")
    smi = tmp_path / "nvidia-smi"
    smi.write_text(NVIDIA_SMI)
    smi.chmod(0o755)
    out = tmp_path / "out"
    env = {**os.environ, "NCCL_TESTS_BIN_DIR": str(bin_dir), "STANDIN_LOG": str(tmp_path / "calls.log"),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", str(SCRIPT), str(out), "-e", f"nccl_preflight_nvidia_smi={smi}"],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-4000:]
    expected = f"ansible-playbook exited 0; report and raw outputs under {out}/ncclkit-report"
    assert done.stdout.rstrip().endswith(expected)
    folder, = (out / "ncclkit-report").iterdir()
    report = json.loads((folder / "report.json").read_text())
    assert report["passed"] and [run["title"] for run in report["runs"]] == [f"single-node on {host()}"]
    run, = report["runs"]
    assert run["perf"]["ranks"] == 1 and run["command"][-2] == "-J"
    assert report["hosts"][host()]["gpu_names"] == ["NVIDIA H200"]
    assert (folder / "raw" / host() / "single.txt").read_bytes() == ONE_GPU.read_bytes()
    assert (folder / "raw" / host() / "single.json").is_file() and (folder / "busbw.png").is_file()
    assert (out / "ansible.log").read_text() in done.stdout
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert calls[-1].startswith("single NCCL_DEBUG=INFO ") and " -g 1 " in calls[-1]


def test_two_simulated_hosts_run_the_multi_node_path_through_mpirun(tmp_path):
    """SIMULATED_HOSTS=2: node0 and node1 (both local) each run the single-node benchmark, then the
    launcher starts two ranks under a real Open MPI, each in its own UTS namespace."""
    if not shutil.which("mpirun") or os.geteuid() != 0:
        pytest.skip("needs Open MPI's mpirun and root (unshare --uts)")
    bin_dir = tmp_path / "nccl-tests" / "build"
    bin_dir.mkdir(parents=True)
    shutil.copy(REPO_ROOT / "tests" / "roles" / "nccl_validate" / "standin.sh", bin_dir / "all_reduce_perf")
    shutil.copy(ONE_GPU, bin_dir / "single.txt")
    shutil.copy(TWO_HOSTS, bin_dir / "multi.txt")
    smi = tmp_path / "nvidia-smi"
    smi.write_text(NVIDIA_SMI)
    smi.chmod(0o755)
    out = tmp_path / "out"
    log = tmp_path / "calls.log"
    env = {**os.environ, "NCCL_TESTS_BIN_DIR": str(bin_dir), "SIMULATED_HOSTS": "2",
           "STANDIN_LOG": str(log), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", str(SCRIPT), str(out), "-e", f"nccl_preflight_nvidia_smi={smi}",
                           "-e", "nccl_validate_json=false"],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-4000:]
    folder, = (out / "ncclkit-report").iterdir()
    report = json.loads((folder / "report.json").read_text())
    titles = [run["title"] for run in report["runs"]]
    assert sorted(titles) == ["multi-node across node0, node1", "single-node on node0", "single-node on node1"]
    multi, = (run for run in report["runs"] if run["name"] == "multi")
    assert multi["perf"]["ranks"] == 2 and multi["perf"]["hosts"] == ["node0", "node1"]
    assert multi["command"][0].endswith("two_hosts_one_gpu_mpirun.sh")
    ranks = [line for line in log.read_text().splitlines() if line.startswith("multi ")]
    assert len(ranks) == 1 and "NCCL_SOCKET_IFNAME=lo" in ranks[0]  # rank 0 of two, under mpirun


def host() -> str:
    return subprocess.run(["hostname", "-s"], capture_output=True, text=True, check=False).stdout.strip()
