"""nccl_validate's report when runs overlap and when validation fails, without a lab: two inventory
hosts on connection local, each with a stand-in all_reduce_perf that prints a real nccl-tests sample
(tests/samples/h200-1gpu-all_reduce_perf.txt) and writes a -J file carrying a planted secret.

- Two plays started in the same second (the same report name) each get their own staging folder
  and their own report folder, holding only their own raw outputs.
- A failing validation still leaves a complete report naming every host before the play fails.
- The -J file is redacted on the host, before it is fetched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[2]
SAMPLE = REPO_ROOT / "tests" / "samples" / "h200-1gpu-all_reduce_perf.txt"
STAMP = "20261202T090419Z"
SECRET = "AWS_SECRET_ACCESS_KEY=planted-by-the-test"

STANDIN = """#!/bin/sh
# all_reduce_perf stand-in: -h says it has -J; a run prints the sample and writes the -J file.
case "$1" in -h) echo "  -J,--output_file <file>"; exit 0;; esac
json=""
while [ $# -gt 0 ]; do [ "$1" = -J ] && json=$2; shift; done
sleep {sleep}
cat {sample}
[ -z "$json" ] || printf '%s' '{{"env": ["NCCL_DEBUG=INFO", "{secret}"], "results": []}}' > "$json"
exit {rc}
"""


def write_standin(folder: Path, rc: int, sleep: float) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / "all_reduce_perf"
    program.write_text(STANDIN.format(sleep=sleep, sample=SAMPLE, secret=SECRET, rc=rc))
    program.chmod(0o755)
    return folder


def inventory(path: Path, bins: dict) -> Path:
    hosts = {host: {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                    "nccl_validate_bin_dir": str(folder)} for host, folder in bins.items()}
    path.write_text(json.dumps({"cluster": {"hosts": hosts}}))
    return path


def start(workdir: Path, inv: Path) -> subprocess.Popen:
    extra = {"ncclkit_gpu_capabilities": {"present": True, "count": 1, "sm": [90]},
             "nccl_validate_multi_node": False, "nccl_validate_stamp": STAMP,
             "nccl_validate_report_parent": str(workdir.parent / "reports")}
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"), "PWD": str(workdir),
           "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1"}
    workdir.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inv),
                             str(HERE / "validate.yml"), "-e", json.dumps(extra)],
                            cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_overlapping_runs_and_a_failing_one_each_write_their_own_complete_report(tmp_path):
    good = write_standin(tmp_path / "bin-good", rc=0, sleep=3)
    broken = write_standin(tmp_path / "bin-broken", rc=1, sleep=3)
    passing = start(tmp_path / "a", inventory(tmp_path / "a.json", {"a1": good, "a2": good}))
    failing = start(tmp_path / "b", inventory(tmp_path / "b.json", {"b1": good, "b2": broken}))
    outputs = [process.communicate(timeout=240)[0] for process in (passing, failing)]
    assert passing.returncode == 0, outputs[0][-3000:]
    assert failing.returncode != 0, outputs[1][-3000:]
    assert "single-node on b2" in outputs[1].split("Fail when a check failed")[-1]

    reports = tmp_path / "reports"
    assert sorted(path.name for path in reports.iterdir()) == [STAMP, STAMP + "-2"]  # no staging left
    by_hosts = {}
    for folder in reports.iterdir():
        report = json.loads((folder / "report.json").read_text())
        by_hosts[tuple(sorted(report["hosts"]))] = (folder, report)
        # Each report holds its own hosts' raw outputs and nothing of the other run's.
        assert sorted(path.name for path in (folder / "raw").iterdir()) == sorted(report["hosts"])
        assert oct(folder.stat().st_mode & 0o777) == "0o700"
        for raw in (folder / "raw").rglob("*"):
            if raw.is_file():
                assert raw.stat().st_mode & 0o777 == 0o600, raw
                assert "planted-by-the-test" not in raw.read_text(), raw
    assert set(by_hosts) == {("a1", "a2"), ("b1", "b2")}
    assert by_hosts[("a1", "a2")][1]["verdict"] == "passed"
    failed = by_hosts[("b1", "b2")][1]
    assert failed["verdict"] == "failed" and set(failed["hosts"]) == {"b1", "b2"}
    assert any(reason.startswith("single-node on b2") for reason in failed["reasons"])
    # The -J files were redacted on the hosts: the scratch folders are gone, none kept the secret.
    assert json.loads((by_hosts[("b1", "b2")][0] / "raw" / "b1" / "single.json").read_text())["env"] == [
        "NCCL_DEBUG=INFO"]
