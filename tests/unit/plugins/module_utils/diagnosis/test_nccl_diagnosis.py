"""Root cause first, on real logs: killed ranks, hangs in a collective or in the rendezvous, and what
follows from them (tests/samples: the H200 recordings and public logs, each naming its source)."""

import io
import pickle
from pathlib import Path

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.flight_recorder import (
    FlightRecorderError,
    compare_dumps,
    read_dump,
)
from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.log import (
    NcclLogError,
    read_nccl_log,
    read_nccl_log_files,
)
from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.ras import RasFormatError, parse_ras_json
from conftest import REPO_ROOT, SAMPLES

DUMP = REPO_ROOT / "benchmarks" / "results" / "h200-torch-stop-flight-recorder-rank0.pkl"


def without_source(name: str) -> bytes:
    """A public sample without its "# source:" line, which describes (and so may quote) the failure."""
    data = (SAMPLES / name).read_bytes()
    first, dummy, rest = data.partition(b"\n")
    return rest if first.startswith(b"# source:") else data


def diagnose(*names):
    return read_nccl_log_files([SAMPLES / name for name in names])


def root(result):
    return result["findings"][0]


def following(result, code):
    return {f["code"] for f in result["findings"] if f["consequence_of"] == code}


# ---- dead ranks ----

def test_mpirun_sigkill_names_rank_1_on_node1_from_nccl_prefixes_and_the_rest_follows():
    result = diagnose("h200-stuck-arp_kill.log")
    first = root(result)
    assert (first["code"], first["rank"], first["host"], first["severity"]) == ("rank_killed", 1, "node1", "error")
    assert "signal 9 (SIGKILL)" in first["cause"] and "the launcher names the machine vm" in first["cause"]
    assert first["evidence"].startswith("mpirun noticed that process rank 1")
    assert following(result, "rank_killed") == {"remote_exited"}
    causes = [f["code"] for f in result["findings"] if f["severity"] == "error" and not f["consequence_of"]]
    assert causes == ["rank_killed"]  # no "a CUDA call failed", no connection error as a cause
    assert result["verdict"].startswith("PROBLEM: rank_killed (node1, rank 1): rank 1 on node1")


def test_torchrun_sigkill_across_two_node_logs():
    result = diagnose("h200-stuck-torch_kill-node0.log", "h200-stuck-torch_kill-node1.log")
    first = root(result)
    assert (first["code"], first["rank"], first["host"]) == ("rank_killed", 1, "node1")
    assert "pid 1747" in first["cause"] and "SIGKILL" in first["cause"]
    assert {"remote_exited", "child_failed"} <= following(result, "rank_killed")
    assert not [f for f in result["findings"] if f["code"] == "cuda_error" and not f["consequence_of"]]
    # torch's lines carry no host: they take the one host their file names.
    assert {f["host"] for f in result["findings"] if f["code"] == "remote_exited"} == {"node0"}


def test_torchrun_exit_code_is_rank_failed():
    result = read_nccl_log(without_source("log-pytorch-121209-childfailed-exitcode1.txt"))
    first = root(result)
    assert (first["code"], first["rank"], first["host"]) == ("rank_failed", 0, "vmnuvocinpoc.internal.cloudapp.net")
    assert "exited with code 1" in first["cause"]


def test_torchrun_sigabrt_with_no_other_error_is_the_root():
    result = read_nccl_log(without_source("log-chimera-2-childfailed-sigabrt.txt"))
    first = root(result)
    assert (first["code"], first["rank"], first["host"]) == ("rank_killed", 0, "gpt-dev-ppt")
    assert "SIGABRT" in first["cause"]
    assert following(result, "rank_killed") == {"child_failed"}


def test_an_abort_after_a_logged_error_follows_from_that_error():
    result = read_nccl_log(without_source("log-gloo-33-enforce-fail-refused-address-in-use.txt"))
    assert root(result)["code"] == "address_in_use"
    killed = next(f for f in result["findings"] if f["code"] == "rank_killed")
    assert killed["consequence_of"] == "address_in_use" and killed["rank"] == 1


def test_kernel_oom_killer_line():
    # issue 25: a kill the kernel's OOM line names is oom_killed (it was rank_killed).
    result = read_nccl_log(without_source("log-lkml-oom-killer.txt"))
    first = root(result)
    assert first["code"] == "oom_killed" and "pid 1669" in first["cause"] and "OOM killer" in first["cause"]


def test_oom_killed_pid_is_mapped_to_its_rank_and_host_by_nccl_prefixes():
    # The H200 SIGKILL run, with the kernel's line for the pid it killed (1747, rank 1 on node1).
    node1 = (SAMPLES / "h200-stuck-torch_kill-node1.log").read_text().splitlines()
    nccl_only = "\n".join(line for line in node1 if " NCCL " in line)
    oom = without_source("log-lkml-oom-killer.txt").decode().replace("1669", "1747")
    first = root(read_nccl_log(nccl_only + "\n" + oom))
    assert (first["code"], first["rank"], first["host"]) == ("oom_killed", 1, "node1")


# ---- hangs ----

def test_sigstop_under_mpirun_is_a_collective_hang_naming_the_stopped_rank():
    result = diagnose("h200-stuck-arp_stop.log")
    first = root(result)
    assert (first["code"], first["rank"], first["host"]) == ("hang_in_collective", 1, "node1")
    assert "state T" in first["cause"] and "network path worked" in first["cause"]
    assert "wrong NIC" not in first["cause"]


def test_torch_watchdog_timeout_names_the_silent_rank_and_forensics_confirm_it():
    result = diagnose("h200-stuck-torch_stop-node0.log", "h200-stuck-torch_stop-node1.log")
    first = root(result)
    assert (first["code"], first["rank"], first["host"]) == ("hang_in_collective", 1, "node1")
    assert "ALLREDUCE (SeqNum 49)" in first["cause"] and "reported no timeout" in first["cause"]
    assert following(result, "hang_in_collective") == {"collective_timeout"}
    result = diagnose("h200-stuck-torch_stop-node0.log", "h200-stuck-torch_stop-node1.log",
                      "h200-stuck-torch_stop-forensics.log")
    assert (root(result)["rank"], root(result)["host"]) == (1, "node1")
    assert "stopped" in root(result)["cause"] and root(result)["evidence"].startswith("ncclkit-forensics: rank=1")


def test_one_timed_out_rank_alone_names_no_suspect():
    first = root(diagnose("h200-stuck-torch_stop-node0.log"))
    assert first["code"] == "hang_in_collective" and first["rank"] is None and "no rank named" in first["cause"]


def test_public_watchdog_timeout_is_a_collective_hang():
    result = read_nccl_log(without_source("log-llamafactory-7396-watchdog-timeout.txt"))
    assert root(result)["code"] == "hang_in_collective"
    assert following(result, "hang_in_collective") >= {"collective_timeout"}


@pytest.mark.parametrize("name", ["log-vista-22-lightning-stuck-initializing-distributed.txt",
                                  "log-idiff-face-14-store-barrier-wait.txt"])
def test_lightning_stopping_at_the_distributed_start_is_a_rendezvous_hang(name):
    result = read_nccl_log(without_source(name))
    first = root(result)
    assert first["code"] == "hang_in_rendezvous" and first["severity"] == "error"
    assert "GLOO_SOCKET_IFNAME" in first["fix"] and "NCCL_SOCKET_IFNAME" in first["fix"]
    assert "MASTER_ADDR" in first["fix"]
    assert not result["notes"]  # no longer "nothing recognised"


def test_a_finished_lightning_run_is_healthy():
    result = diagnose("h200-lightning-nccl-conf-node0.log", "h200-lightning-nccl-conf-node1.log")
    assert result["verdict"].startswith("HEALTHY")
    assert not [f for f in result["findings"] if f["code"].startswith("hang_")]


# ---- NCCL RAS ----

def test_ras_text_names_the_missing_rank():
    result = read_nccl_log(without_source("nccl-ras-verbose-status-rank1-stopped.txt"))
    first = root(result)
    assert (first["code"], first["rank"]) == ("hang_in_collective", 1)
    assert "Missing communicator data from 1 rank" in first["cause"] and "process 482" in first["cause"]


def test_ras_json_of_nccl_2_28_9_is_repaired_and_read():
    text = (SAMPLES / "nccl-ras-json-status-rank1-stopped.json").read_text()
    assert [(p["rank"], p["pid"], p["reason"]) for p in parse_ras_json(text)] == [(1, "482", "RAS: unresponsive")]
    first = root(read_nccl_log_files([SAMPLES / "nccl-ras-json-status-rank1-stopped.json"]))
    assert (first["code"], first["rank"]) == ("hang_in_collective", 1)
    with pytest.raises(RasFormatError):
        parse_ras_json('{"communicators": [')


# ---- flight recorder ----

def test_flight_recorder_dump_names_the_missing_rank_and_the_collective():
    dump = read_dump(DUMP.read_bytes(), "nccl_trace_rank_0")
    assert dump["rank"] == 0 and dump["pg"]["0"]["ranks"] == [0, 1] and len(dump["entries"]) == 46
    verdict = compare_dumps([dump])
    assert (verdict["rank"], verdict["missing"], verdict["seq"], verdict["op"]) == (1, [1], 45, "all_reduce")


def test_diagnose_reads_a_dump_among_the_logs():
    result = read_nccl_log_files([SAMPLES / "h200-stuck-torch_kill-node0.log", DUMP])
    first = root(result)
    assert (first["code"], first["rank"]) == ("hang_in_collective", 1)
    assert "#45 all_reduce" in first["cause"]


def test_dumps_out_of_step_name_the_rank_behind():
    original = pickle.loads(DUMP.read_bytes())  # our own recording: trusted
    ahead = dict(original, pg_status={"0": dict(original["pg_status"]["0"], last_completed_collective=46)})
    dumps = [read_dump(pickle.dumps(original), "trace_0"), read_dump(pickle.dumps(ahead), "trace_1")]
    verdict = compare_dumps(dumps)
    assert (verdict["rank"], verdict["missing"], verdict["seq"]) == (0, [], 45)


class _Boom:
    def __reduce__(self):
        return (Path.touch, (Path("/tmp/ncclkit-pickle-ran"),))


def test_a_pickle_that_would_run_code_is_refused_without_running_it(tmp_path):
    marker = Path("/tmp/ncclkit-pickle-ran")
    marker.unlink(missing_ok=True)
    crafted = pickle.dumps({"entries": [], "x": _Boom()})
    with pytest.raises(FlightRecorderError, match="refused"):
        read_dump(crafted, "evil")
    assert not marker.exists()
    path = tmp_path / "nccl_trace_rank_3"
    path.write_bytes(crafted)
    with pytest.raises(NcclLogError, match="refused"):
        read_nccl_log_files([path])
    assert not marker.exists()


def test_stdin_like_streams_are_read():
    result = read_nccl_log_files([io.BytesIO((SAMPLES / "h200-stuck-arp_kill.log").read_bytes())])
    assert root(result)["code"] == "rank_killed"


# ---- resource use (docs/benchmarks.md has the 100 MB figures) ----

def test_spaces_inside_an_env_value_take_linear_time():
    # The old pattern took ~0.7 s for this one line (quadratic in the spaces), minutes for a log.
    import time

    line = "node0:1:1 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth1" + " " * 8000 + "x\n"
    started = time.process_time()
    result = read_nccl_log(line * 20)
    assert time.process_time() - started < 1.0
    assert result["hosts"]["node0"]["env"]["NCCL_SOCKET_IFNAME"].startswith("eth1")


def test_thousands_of_distinct_nics_take_linear_time():
    import time

    lines = "".join(f"node0:1:1 [0] NCCL INFO NET/Socket : Using [0]eth{i}:10.{i >> 16}.{(i >> 8) & 255}.{i & 255}<0>\n"
                    for i in range(20000))
    started = time.process_time()
    result = read_nccl_log(lines)
    assert time.process_time() - started < 5.0  # the old list scan: ~2e8 comparisons
    assert len(result["hosts"]["node0"]["net_nics"]) == 20000


def test_a_large_log_is_read_in_bounded_memory(tmp_path):
    # A 12 MB job log (benchmarks/diagnose_speed.py's generator), in a subprocess: peak RSS stays
    # that of the interpreter plus a few MiB, whatever the size (the 100 MB run: under 50 MiB).
    import subprocess
    import sys

    script = (REPO_ROOT / "benchmarks" / "diagnose_speed.py")
    done = subprocess.run([sys.executable, str(script), "--log-mb", "12", "--what", "diagnose"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    peak = float(done.stdout.split("peak RSS ")[1].split(" MiB")[0])
    assert peak < 100, done.stdout
    assert "PROBLEM: rank_killed (gpu-node-0001, rank 9)" in done.stdout


def test_findings_do_not_repeat_the_host_list():
    # 300 hosts on one NCCL version, 300 on another: each finding names a few hosts, not all 300.
    lines = "".join(f"h{i:03d}:1:1 [0] NCCL INFO NCCL version {'2.28.9' if i % 2 else '2.21.5'}+cuda12\n"
                    for i in range(600))
    result = read_nccl_log(lines)
    mismatches = [f for f in result["findings"] if f["code"] == "nccl_version_mismatch"]
    assert len(mismatches) == 300
    assert all(len(f["cause"]) < 400 and "300 hosts (" in f["cause"] for f in mismatches)
    assert len(result["verdict"]) < 400


def test_ras_lines_inside_forensics_output_name_the_rank():
    # nccl_forensics.py prefixes RAS's answer with "ncclkit-forensics: ras: " (the H200 RAS text).
    ras = without_source("nccl-ras-verbose-status-rank1-stopped.txt").decode().splitlines()
    text = "\n".join(f"ncclkit-forensics: ras: {line}" for line in ras)
    first = root(read_nccl_log(text))
    assert (first["code"], first["rank"]) == ("hang_in_collective", 1)
    assert first["evidence"].startswith("ncclkit-forensics: ras:") and "Rank 1 -- GPU 0" in first["evidence"]


@pytest.mark.parametrize("row", [line for line in (REPO_ROOT / "docs" / "diagnosis.md").read_text().splitlines()
                                 if line.startswith("| `h200-stuck-") and " and " not in line.split("|")[1]
                                 or line.startswith("| `h200-stuck-torch_kill-node0.log h200")
                                 or line.startswith("| `h200-stuck-torch_stop-node0.log h200")
                                 or line.startswith(("| `lab-gloo-", "| `h200-validate-stuck-",
                                                     "| `nccl-ras-json-status"))])
def test_the_documented_verdicts_are_the_engine_s(row):
    names = row.split("|")[1].split("`")[1].split()
    documented = row.split("|")[2].strip().strip("`")
    assert diagnose(*names)["verdict"] == documented
