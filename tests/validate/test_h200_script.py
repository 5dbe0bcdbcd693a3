"""benchmarks/h200_validate.sh: shell syntax, and its whole single-node path on this machine with
a stand-in nvidia-smi and all_reduce_perf (connection local), as the lead runs it on the H200."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "benchmarks" / "h200_validate.sh"
SAMPLES = REPO_ROOT / "tests" / "samples"
ONE_GPU = SAMPLES / "h200-1gpu-all_reduce_perf.txt"
NVIDIA_SMI = """#!/bin/sh
echo "0, NVIDIA H200, 9.0, 580.65.06, 143771, 00000000:00:06.0"
"""


def test_the_script_parses_and_refuses_a_missing_folder():
    assert subprocess.run(["bash", "-n", str(SCRIPT)]).returncode == 0
    done = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True)
    assert done.returncode == 2 and "usage:" in done.stderr


def test_the_single_node_path_runs_end_to_end_with_stand_ins(tmp_path):
    bin_dir = tmp_path / "nccl-tests" / "build"
    bin_dir.mkdir(parents=True)
    shutil.copy(REPO_ROOT / "tests" / "validate" / "standin.sh", bin_dir / "all_reduce_perf")
    shutil.copy(ONE_GPU, bin_dir / "single.txt")
    shutil.copy(SAMPLES / "h200-1gpu-all_reduce_perf.json", bin_dir / "single.json")
    smi = tmp_path / "nvidia-smi"
    smi.write_text(NVIDIA_SMI)
    smi.chmod(0o755)
    out = tmp_path / "out"
    env = {**os.environ, "NCCL_TESTS_BIN_DIR": str(bin_dir), "STANDIN_LOG": str(tmp_path / "calls.log"),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", str(SCRIPT), str(out), "-e", f"nccl_preflight_nvidia_smi={smi}"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:]
    assert done.stdout.rstrip().endswith(f"ansible-playbook exited 0; report and raw outputs under {out}/ncclkit-report")
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


def host() -> str:
    return subprocess.run(["hostname", "-s"], capture_output=True, text=True).stdout.strip()
