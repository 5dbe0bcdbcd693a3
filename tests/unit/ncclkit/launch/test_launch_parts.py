"""ncclkit.launch's parts without a cluster: host settings from inventory variables, the stall
watch, the failure and hang findings, secret masking, and the host side's start/stop against real
local processes found by their marker (a double-forked child included)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ncclkit.inventory import InventoryError
from ncclkit.launch import record, transport, verdict
from ncclkit.launch.hosts import LaunchHost, host_settings
from ncclkit.launch.watch import StallWatch, in_collective


def test_host_settings_carry_ssh_options_port_key_and_local_env():
    host = host_settings("node2", 1, {"ansible_host": "198.18.0.2", "ansible_port": 41002,
                                      "ansible_user": "root", "ansible_ssh_private_key_file": "/k",
                                      "ansible_ssh_common_args": "-o ProxyJump=j"})
    assert (host.address, host.port, host.user, host.key, host.ssh_args) == ("198.18.0.2", 41002, "root", "/k",
                                                                             ["-o", "ProxyJump=j"])
    argv = transport.ssh_base(host, Path("/tmp/cp"))
    assert argv[:3] == ["ssh", "-o", "ProxyJump=j"]        # the inventory's options first: ssh keeps the first
    assert ["-p", "41002"] == argv[argv.index("-p"):argv.index("-p") + 2] and argv[-2:] == ["--", "198.18.0.2"]
    local = host_settings("sim1", 0, {"ansible_connection": "local", "ncclkit_launch_env": {"NCCL_HOSTID": "sim1"}})
    assert local.connection == "local" and local.env == {"NCCL_HOSTID": "sim1"}
    assert transport.host_argv(local, "ready", ["x"], Path("/tmp"))[0] == "python3"


@pytest.mark.parametrize("hostvars, words", [
    ({"ansible_port": "ssh"}, "not a port"),
    ({"ansible_connection": "winrm"}, "ssh or local"),
    ({"ansible_ssh_common_args": "ProxyJump=x"}, "ssh options"),
    ({"ncclkit_launch_env": {"BAD NAME": "1"}}, "names are"),
    ({"ansible_host": "{{ lookup('env', 'X') }}"}, "template"),
])
def test_host_settings_refuse_what_launch_cannot_use(hostvars, words):
    with pytest.raises(InventoryError, match=words):
        host_settings("node1", 0, hostvars)


def sample(t, *ranks):
    made = [dict(rank=r, local_rank=0, pid=100 + r, world=2, **fields) for r, fields in ranks]
    return {"t": t, "clk_tck": 100, "ranks": made}


WAIT = ["all_reduce (torch/distributed/distributed_c10d.py:2500)", "step (train.py:10)"]


def test_watch_names_the_stopped_rank_after_stall_after_and_not_before():
    watch = StallWatch(stall_after=10)
    events = watch.add("n1", sample(0, (0, {"state": "S", "stack": ["a (t.py:1)"], "main_cpu": 0, "io": 0})))
    events += watch.add("n2", sample(0, (1, {"state": "S", "stack": ["a (t.py:2)"], "main_cpu": 0, "io": 0})))
    assert any(e.startswith("every rank joined (2)") for e in events)
    for t in (2, 4):  # training: stacks move
        watch.add("n1", sample(t, (0, {"state": "S", "stack": [f"a (t.py:{t})"], "main_cpu": t, "io": 0})))
    for t in range(6, 30, 2):  # rank 1 stopped, rank 0 waits (spinning: CPU grows, stack put)
        watch.add("n1", sample(t, (0, {"state": "R", "stack": WAIT, "main_cpu": 100 * t, "io": 0})))
        watch.add("n2", sample(t, (1, {"state": "T", "main_cpu": 4, "io": 0})))
        stall = watch.stalled(t)
        if t < 14:
            assert stall is None, t
        elif stall:
            break
    assert stall and stall["suspects"][0]["rank"] == 1 and stall["waiting"] == [0]
    assert watch.stalled(t + 2) is None   # reported once


def test_watch_counts_storage_io_and_moving_stacks_as_progress():
    watch = StallWatch(stall_after=5)
    for t in range(0, 40, 2):  # rank 0 writes a checkpoint (same stack), rank 1 waits in a barrier
        watch.add("n1", sample(t, (0, {"state": "D", "stack": ["write (ckpt.py:3)"], "main_cpu": 0, "io": 1000 * t})))
        watch.add("n2", sample(t, (1, {"state": "S", "stack": WAIT, "main_cpu": 0, "io": 0})))
        assert watch.stalled(t) is None, t


def test_watch_a_spinning_rank_with_its_stack_put_does_not_move():
    watch = StallWatch(stall_after=6)
    for t in range(0, 20, 2):  # rank 0's CUDA call spins behind a waiting NCCL kernel (user code frame)
        watch.add("n1", sample(t, (0, {"state": "R", "stack": ["mse_loss (train.py:9)"], "main_cpu": 200 * t})))
        watch.add("n2", sample(t, (1, {"state": "T", "main_cpu": 3})))
    stall = watch.stalled(18)
    assert stall and stall["suspects"][0]["rank"] == 1


def test_watch_a_training_loop_sampled_at_the_same_line_on_every_rank_is_not_a_stall():
    # A step that spends its time in one call: every sample of every rank shows the same stack, in
    # user code, while the CPU grows (benchmarks/launch_goals.py's 5-minute job showed this).
    loop = ["busy (launch_job.py:45)", "training_step (launch_job.py:103)", "closure (automatic.py:131)"]
    watch = StallWatch(stall_after=10)
    for t in range(0, 100, 2):
        for rank in (0, 1):
            watch.add(f"n{rank + 1}", sample(t, (rank, {"state": "S", "stack": loop, "main_cpu": 30 * t, "io": 0})))
        assert watch.stalled(t) is None, t


def test_watch_names_a_rank_busy_in_its_own_loop_while_the_others_wait_in_a_collective():
    watch = StallWatch(stall_after=10)
    for t in range(0, 40, 2):
        watch.add("n1", sample(t, (0, {"state": "S", "stack": WAIT, "main_cpu": 0, "io": 0})))
        watch.add("n2", sample(t, (1, {"state": "R", "stack": ["parse (data.py:7)"], "main_cpu": 90 * t, "io": 0})))
        stall = watch.stalled(t)
        if stall:
            break
    assert stall and 10 <= t <= 14
    assert [s["rank"] for s in stall["suspects"]] == [1] and stall["waiting"] == [0]


def test_in_collective_reads_py_spy_frames():
    assert in_collective(WAIT)
    assert not in_collective(["training_step (train.py:40)", "run (loop.py:3)"])
    assert in_collective(["_TrainingEpochLoop._broadcast_sigterm_tensor (lightning/pytorch/loops/"
                          "training_epoch_loop.py:261)"])


def test_failure_finding_quotes_the_failing_ranks_exception_and_maps_the_host():
    tracker = verdict.TracebackTracker()
    for line in ("[rank1]: Traceback (most recent call last):", "[rank1]:   File \"t.py\", line 3, in f",
                 "launch-job rank=1 event=raise",  # stdout, interleaved (seen on an H100)
                 "[rank1]: ValueError: bad batch at step 2"):
        tracker.add(("node2", 1), line)
    engine = {"findings": [
        {"code": "rank_failed", "severity": "error", "host": "node1", "rank": 0,
         "cause": "rank 0 exited with code 1", "consequence_of": None},
        {"code": "rank_failed", "severity": "error", "host": "localhost", "rank": 1,
         "cause": "rank 1 exited with code 1", "consequence_of": "rank_failed"}]}
    hosts_of_rank = {0: "node1", 1: "node2"}
    named = verdict.failure_finding(engine, {"host": "node2", "rc": 1, "rank": 1}, tracker.last, hosts_of_rank)
    assert (named["host"], named["rank"], named["machine"]) == ("node2", 1, "localhost")
    assert named["cause"].endswith("ValueError: bad batch at step 2") and named["consequence_of"] is None
    alone = verdict.failure_finding(None, {"host": "node2", "rc": 1, "rank": 1, "pid": "9"}, tracker.last, {})
    assert alone["code"] == "rank_failed" and "bad batch" in alone["cause"] and "pid 9" in alone["cause"]


def test_hang_finding_without_a_stopped_rank_names_the_one_outside_the_collective():
    stall = {"seconds": 61.0, "waiting": [0], "suspects": [{"rank": 1, "host": "n2", "pid": 7, "state": "S",
                                                            "where": "load (data.py:9)"}]}
    named = verdict.hang_finding(None, stall, {})
    assert (named["code"], named["rank"], named["host"]) == ("hang_in_collective", 1, "n2")
    assert "load (data.py:9)" in named["cause"]


def test_secret_values_are_masked_in_env_and_argv():
    masked = record.mask_env({"HF_TOKEN": "x", "NCCL_IB_PKEY": "1", "LR": "2"})
    assert masked == {"HF_TOKEN": "***", "NCCL_IB_PKEY": "1", "LR": "2"}
    assert record.mask_argv(["--api-key", "s", "--wandb-token=t", "AWS_SECRET_ACCESS_KEY=u", "--lr", "1"]) == [
        "--api-key", "***", "--wandb-token=***", "AWS_SECRET_ACCESS_KEY=***", "--lr", "1"]


def host_side(mode: str, *args: str, stdin: bytes = b"") -> dict:
    local = LaunchHost(name="sim1", node_rank=0, address="localhost", connection="local", python=sys.executable)
    done = subprocess.run(transport.host_argv(local, mode, list(args), Path("/tmp")),
                          input=transport.script_payload() + stdin, capture_output=True, timeout=60, check=True)
    return json.loads(done.stdout.decode().strip().splitlines()[-1])


JOB = """import os, subprocess, sys, time
code = "import os, time\\nif os.fork() == 0:\\n    os.setsid()\\n    if os.fork() == 0:\\n        time.sleep(300)\\n"
subprocess.run([sys.executable, "-c", code])
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
time.sleep(300)
"""


def test_host_side_starts_marked_and_stops_every_process_double_fork_included(tmp_path):
    run_dir = str(tmp_path / "run" / "launchid" / "sim1")
    marker = {"NCCLKIT_LAUNCH_ID": "launchid", "NCCLKIT_LAUNCH_HOST": "sim1", "RANK": "0"}
    started = host_side("ready", run_dir, str(tmp_path), "job.py", "--", sys.executable, "-c", JOB,
                        stdin=(json.dumps(marker) + "\n").encode())
    # Until the same 3 or more are seen twice: the double fork's intermediate processes come and go.
    deadline, last = time.time() + 20, None
    while time.time() < deadline:
        state = host_side("status", run_dir, "launchid", "sim1")
        if len(state["pids"]) >= 3 and sorted(state["pids"]) == last:
            break
        last = sorted(state["pids"])
        time.sleep(0.3)
    assert len(state["pids"]) >= 3, state            # the job, its child, the double-forked grandchild
    assert started["pid"] not in state["pids"]        # the wrapper is not marked: it records the exit code
    stopped = host_side("stop", run_dir, "launchid", "sim1", "5")
    assert stopped["left"] == [] and set(state["pids"]) <= set(stopped["found"])
    for pid in state["pids"]:
        stat = Path(f"/proc/{pid}/stat")
        assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"
    deadline = time.time() + 10
    while not os.path.exists(os.path.join(run_dir, "rc")) and time.time() < deadline:
        time.sleep(0.1)
    assert Path(run_dir, "rc").read_text().strip() == str(128 + 15)   # ended by TERM
    assert host_side("clean", run_dir, "launchid")["removed"] == run_dir and not Path(run_dir).exists()


def test_the_recorded_h100_stall_is_named_by_the_diagnosis_engine(tmp_path):
    """The forensics launch wrote for a SIGSTOPped rank over NCCL (tests/samples/launch-h100-2host-nccl.json),
    read again by the engine `ncclkit diagnose` uses: rank 1 on sim2, stopped, and RAS agrees."""
    from conftest import SAMPLES

    recorded = json.loads((SAMPLES / "launch-h100-2host-nccl.json").read_text())["scenarios"]["sigstop"]
    (tmp_path / "forensics.log").write_text("\n".join(recorded["forensics_log"]) + "\n")
    stall = {"seconds": 20.2, "waiting": [0], "suspects": []}
    named = verdict.hang_finding(verdict.diagnose([tmp_path / "forensics.log"]), stall, {0: "sim1", 1: "sim2"})
    assert (named["code"], named["rank"], named["host"]) == ("hang_in_collective", 1, "sim2")
    assert "stopped" in named["cause"] and "RAS" in named["cause"]


def test_ready_probes_then_starts_only_on_the_controllers_word(tmp_path):
    local = LaunchHost(name="sim1", node_rank=0, address="localhost", connection="local", python=sys.executable)
    run_dir = tmp_path / "run"
    marker = tmp_path / "started"
    argv = [str(run_dir), str(tmp_path), "train.py", "--", sys.executable, "-c",
            f"open({str(marker)!r}, 'w').write('x')"]
    (tmp_path / "train.py").write_text("")

    def ready(word: bytes):
        done = subprocess.run(transport.host_argv(local, "ready", argv, Path("/tmp")),
                              input=transport.script_payload() + word, capture_output=True, timeout=60, check=True)
        return [json.loads(line) for line in done.stdout.decode().splitlines()]

    refused = ready(b"")   # the end of input: a refused launch starts nothing and writes nothing
    assert len(refused) == 1 and refused[0]["script"] and refused[0]["launcher"] and not run_dir.exists()
    probe, started = ready(b'{"NCCLKIT_LAUNCH_ID": "x"}\n')
    assert probe == refused[0] and started["pid"] > 0
    deadline = time.time() + 20
    while not (run_dir / "rc").exists() and time.time() < deadline:
        time.sleep(0.1)
    assert marker.exists() and (run_dir / "rc").read_text() == "0"
