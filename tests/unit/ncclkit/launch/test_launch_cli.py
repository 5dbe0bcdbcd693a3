"""`ncclkit launch` against the shared exit-code table (docs/cli.md's launch column), with simulated
hosts on this machine (ansible_connection local) and a stand-in launcher that starts the script as
torchrun would (RANK, LOCAL_RANK, WORLD_SIZE; torchrun itself runs in tests/lab/test_launch_lab.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import REPO_ROOT

LAUNCHER = """#!{python}
# torchrun's options (--nnodes N --node-rank R --tee 3 ...), then the script: one rank per host.
import os, sys
args = sys.argv[1:]
options = {{}}
while args and args[0].startswith("--"):
    options[args[0]] = args[1]
    args = args[2:]
rank = options["--node-rank"]
os.environ.update(RANK=rank, LOCAL_RANK="0", WORLD_SIZE=options["--nnodes"], LOCAL_WORLD_SIZE="1")
os.execv(sys.executable, [sys.executable] + args)
"""


def inventory(tmp_path: Path, hosts: str = "sim1: {}\n    sim2: {}") -> Path:
    launcher = tmp_path / "launcher"
    launcher.write_text(LAUNCHER.format(python=sys.executable))
    launcher.chmod(0o755)
    path = tmp_path / "hosts.yml"
    path.write_text(f"cluster:\n  hosts:\n    {hosts}\n  vars:\n    ansible_connection: local\n"
                    f"    ansible_python_interpreter: {sys.executable}\n    ncclkit_launch_torchrun: {launcher}\n")
    return path


def ncclkit(tmp_path, *argv, popen=False):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "src"), str(REPO_ROOT / "collections")])}
    command = [sys.executable, "-m", "ncclkit", *argv]
    if popen:
        # As a terminal starts it: a test run in the background (a non-interactive shell's `&`) inherits
        # SIGINT ignored, and the Ctrl-C this stands for would never arrive.
        return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                cwd=tmp_path, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False)


def test_bad_input_is_3_with_one_line(tmp_path):
    for argv, words in ((["launch", "-i", "/nonexistent.yml", "--", "t.py"], "does not exist"),
                        (["launch", "-i", str(inventory(tmp_path))], "no training script"),
                        (["launch", "--status", str(tmp_path)], "no launch.json")):
        done = ncclkit(tmp_path, *argv)
        assert done.returncode == 3 and words in done.stderr and len(done.stderr.strip().splitlines()) == 1, done


def test_a_healthy_job_is_0_and_its_record_masks_secrets(tmp_path):
    (tmp_path / "job.py").write_text("import os; print('hello from', os.environ['RANK'], flush=True)\n")
    hosts = "sim1: {ncclkit_launch_env: {NCCL_HOSTID: sim1, HF_TOKEN: s3cret}}\n    sim2: {}"
    done = ncclkit(tmp_path, "launch", "-i", str(inventory(tmp_path, hosts)), "--no-check", "--json", "--",
                   "job.py", "--api-key", "hunter2")
    assert done.returncode == 0, done.stderr[-2000:]
    document = json.loads(done.stdout)
    assert document["verdict"].startswith("SUCCEEDED") and [h["exit_code"] for h in document["hosts"]] == [0, 0]
    assert "[sim2] hello from 1" in done.stderr
    text = "\n".join(path.read_text() for path in Path(document["folder"]).iterdir())
    assert "s3cret" not in text and "hunter2" not in text and "hello from 0" in text


def test_a_rank_that_fails_is_1_with_its_exception_quoted(tmp_path):
    (tmp_path / "job.py").write_text("import os, time\nif os.environ['RANK'] == '1':\n"
                                     "    raise ValueError('bad batch')\ntime.sleep(120)\n")
    done = ncclkit(tmp_path, "launch", "-i", str(inventory(tmp_path)), "--no-check", "--grace", "2", "--", "job.py")
    assert done.returncode == 1
    assert "ValueError: bad batch" in done.stdout.splitlines()[-1] and "sim2" in done.stdout.splitlines()[-1]


def test_a_missing_script_refuses_the_launch_with_1(tmp_path):
    done = ncclkit(tmp_path, "launch", "-i", str(inventory(tmp_path)), "--no-check", "--json", "--", "missing.py")
    document = json.loads(done.stdout)
    assert done.returncode == 1 and document["findings"][0]["code"] == "launch_script_missing"
    assert not Path(os.path.expanduser(f"~/.cache/ncclkit/launch/{document['launch_id']}")).exists()


def test_an_unreachable_host_is_4(tmp_path):
    path = tmp_path / "hosts.yml"
    path.write_text("cluster:\n  hosts:\n    far:\n      ansible_host: 127.0.0.1\n      ansible_port: 9\n"
                    "      ansible_ssh_common_args: -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null\n")
    done = ncclkit(tmp_path, "launch", "-i", str(path), "--no-check", "--", "job.py")
    assert done.returncode == 4, (done.stdout, done.stderr)


def test_ctrl_c_is_130_and_leaves_no_process_then_status_finds_none(tmp_path):
    (tmp_path / "job.py").write_text("import time\nprint('up', flush=True)\ntime.sleep(120)\n")
    process = ncclkit(tmp_path, "launch", "-i", str(inventory(tmp_path)), "--no-check", "--json", "--grace", "2",
                      "--", "job.py", popen=True)
    deadline = time.time() + 60
    while time.time() < deadline and not list(tmp_path.glob("ncclkit-report/*/sim2.log")):
        time.sleep(0.2)
    time.sleep(2)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err[-2000:]
    document = json.loads(out)
    assert document["status"] == "interrupted" and all(h["stopped"]["left"] == [] for h in document["hosts"])
    done = ncclkit(tmp_path, "launch", "--status", document["folder"], "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["processes"] == 0
