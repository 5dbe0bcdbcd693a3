"""The nccl_validate role on a 2-node lab (index 60) with stand-in benchmarks that print real
nccl-tests samples (the lab has no GPU): fetching, gating, the report, failures, hangs, hosts
without GPU and check mode.

The facts of the roles before nccl_validate (nccl_tests, nccl_profile, nccl_preflight) are given
as extra variables, as the contract names them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ncclkit.lab import Lab

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "lab"))
from lab_helpers import REPO_ROOT, leftovers, needs_root  # noqa: E402
from lab_indices import lab_index  # noqa: E402
from lab_playbook import Played, lab_cluster, play  # noqa: E402

pytestmark = [pytest.mark.lab, needs_root]

INDEX = lab_index(__file__)
HERE = Path(__file__).resolve().parent
SAMPLES = REPO_ROOT / "tests" / "samples"
ONE_GPU = SAMPLES / "h200-1gpu-all_reduce_perf.txt"
TWO_HOSTS = SAMPLES / "h200-2host-socket-defaults.txt"
BAD_IFNAME = SAMPLES / "h200-2host-bad-socket-ifname.txt"

# The sample's first 16 log lines (its first line names its source).
DEBUG_INFO_HEAD = b"".join((SAMPLES / "h200-2host-socket-nccl-debug-info.txt").open("rb").readlines()[1:17])

# Stand-in folders, the same on every node: file name -> content. Each mode is one play, with
# failures of different kinds in its single-node and multi-node runs.
MODES = {
    "pass": {"single.txt": ONE_GPU.read_bytes(),
             "single.json": (SAMPLES / "h200-1gpu-all_reduce_perf.json").read_bytes(),
             "multi.txt": TWO_HOSTS.read_bytes()},
    # node2 alone hangs after NCCL's first lines (bootstrap on lo); across nodes busbw is 2.99.
    "slow": {"single.txt": ONE_GPU.read_bytes(), "multi.txt": TWO_HOSTS.read_bytes()},
    # node2 alone dies (no socket interface); across nodes each rank runs alone: no MPI=1.
    "broken": {"single.txt": ONE_GPU.read_bytes(), "multi.txt": ONE_GPU.read_bytes() * 2},
}
# node1 alone is killed (KILL, as by the OOM killer) at once in "broken": not a hang.
NODE1 = {"broken": {"single.rc": b"137\n"}}
NODE2 = {"slow": {"single.txt": DEBUG_INFO_HEAD, "single.hang": b""},
         "broken": {"single.txt": BAD_IFNAME.read_bytes(), "single.rc": b"3\n"}}
STANDIN_LOG = "/tmp/ncclkit-standin.log"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    for lab in lab_cluster(INDEX, tmp_path_factory.mktemp(f"lab{INDEX}"), nodes=2):
        install_standins(lab, "node1", {mode: {**files, **NODE1.get(mode, {})} for mode, files in MODES.items()})
        install_standins(lab, "node2", {mode: {**files, **NODE2.get(mode, {})} for mode, files in MODES.items()})
        yield lab
    assert leftovers(INDEX, lab.inventory_path) == []


def run_in(lab: Lab, node: str, script: str) -> str:
    done = lab.exec(node, ["sh", "-c", script], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout


def install_standins(lab: Lab, node: str, modes: dict) -> None:
    # Through stdin, into the node's own /opt: each node gets its own stand-ins.
    files = {"/opt/standin.sh": (HERE / "standin.sh").read_bytes()}
    files.update((f"/opt/standin/{mode}/{name}", content) for mode, names in modes.items()
                 for name, content in names.items())
    for path, content in files.items():
        done = lab.exec(node, ["sh", "-c", f"mkdir -p {os.path.dirname(path)} && cat > {path}"], input=content,
                        capture_output=True, timeout=30)
        assert done.returncode == 0, done.stderr
    links = ["chmod +x /opt/standin.sh", "mkdir -p /opt/ncclkit/bin",
             "ln -sf /opt/standin.sh /opt/ncclkit/bin/ncclkit-mpirun"]
    links += [f"ln -sf /opt/standin.sh /opt/standin/{mode}/all_reduce_perf" for mode in MODES]
    run_in(lab, node, " && ".join(links))


def contract_facts(mode: str, **overrides) -> dict:
    facts = {
        "ncclkit_nccl_tests": {"available": True, "reason": "", "bin_dir": f"/opt/standin/{mode}",
                               "version": "2.19.6", "nccl_version": "2.28.9", "mpi": True},
        "ncclkit_gpu_capabilities": {"present": True, "count": 1, "sm": [90]},
        "ncclkit_launch": {"mpirun": "/opt/ncclkit/bin/ncclkit-mpirun", "nnodes": 2},
        # A profile that logs to a file: validation must keep NCCL's lines in its own output.
        "ncclkit_nccl_env": {"NCCL_SOCKET_IFNAME": "eth1", "NCCL_IB_DISABLE": "1",
                             "NCCL_DEBUG_FILE": "/var/log/nccl.%h.log", "NCCL_DEBUG_SUBSYS": "COLL"},
    }
    facts.update(overrides)
    return facts


def validate(lab: Lab, workdir: Path, extra: dict, *options: str) -> tuple[Played, Path | None]:
    """ansible-playbook of the role, started in `workdir`; returns the run and its report folder."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "extra.json").write_text(json.dumps(extra))
    done = play(lab.inventory_path, str(HERE / "validate.yml"), env={"PWD": str(workdir)},
                args=("-e", "@extra.json", *options), timeout=300, cwd=workdir)
    reports = sorted((workdir / "ncclkit-report").glob("2*")) if (workdir / "ncclkit-report").is_dir() else []
    assert len(reports) <= 1
    return done, (reports[0] if reports else None)


def report_of(folder: Path) -> dict:
    report = json.loads((folder / "report.json").read_text())
    assert (folder / "report.md").read_text().startswith("# ncclkit validation report: "
                                                         + report["verdict"].upper())
    # Written in one step: no staging folder is left beside it.
    assert [path.name for path in folder.parent.iterdir()] == [folder.name]
    return report


def runs_by_title(report: dict) -> dict:
    return {run["title"]: run for run in report["runs"]}


def failure_tail(done: Played) -> str:
    """The play's last lines: where the reason must be."""
    return "\n".join(done.stdout.splitlines()[-40:])


def test_a_healthy_cluster_passes_with_fetched_outputs_and_a_report(lab, tmp_path):
    before = run_in(lab, "node1", f"cat {STANDIN_LOG} 2>/dev/null || true")
    scratch = "ls -d /tmp/ncclkit-validate-* 2>/dev/null || true"
    scratch_before = run_in(lab, "node1", scratch)
    done, folder = validate(lab, tmp_path, contract_facts("pass", nccl_validate_min_busbw_gbps=2.5,
                                                          nccl_validate_env={"NCCL_ALGO": "Ring"}))
    assert done.rc == 0, done.stdout[-3000:]
    assert "nccl_validate PASSED: 3 run(s), 3 passed" in done.stdout
    assert "changed=0" in done.stdout.split("PLAY RECAP")[1]
    report = report_of(folder)
    assert report["passed"] and report["reasons"] == []
    runs = runs_by_title(report)
    assert list(runs) == ["single-node on node1", "single-node on node2", "multi-node across node1, node2"]
    multi = runs["multi-node across node1, node2"]
    assert multi["perf"]["ranks"] == 2 and multi["perf"]["largest_size_busbw_gbps"] == 2.99
    assert multi["expected_ranks"] == 2 and multi["command"][:11] == [
        "/opt/ncclkit/bin/ncclkit-mpirun", "-x", "NCCL_DEBUG", "-x", "NCCL_ALGO", "-x", "NCCL_DEBUG",
        "-x", "NCCL_DEBUG_FILE", "-x", "NCCL_DEBUG_SUBSYS"]
    # Raw outputs fetched byte for byte, the -J JSON where the stand-in wrote one.
    assert (folder / "raw/node1/multi.txt").read_bytes() == TWO_HOSTS.read_bytes()
    assert (folder / "raw/node2/single.txt").read_bytes() == ONE_GPU.read_bytes()
    assert (folder / "raw/node2/single.json").is_file() and not (folder / "raw/node1/multi.json").exists()
    assert sorted(runs["single-node on node2"]["raw"]) == ["raw/node2/single.json", "raw/node2/single.stderr.txt",
                                                           "raw/node2/single.txt"]
    # What the launcher and the benchmark were given: one rank per GPU, -J, the profile, INFO logs.
    calls = run_in(lab, "node1", f"cat {STANDIN_LOG}")[len(before):].splitlines()
    single, remote, multi_call = calls
    # nccl_validate_env reaches the ranks on the other hosts too: the launcher forwards it.
    # The run's own logging wins over the profile's NCCL_DEBUG_FILE and NCCL_DEBUG_SUBSYS (empty:
    # NCCL writes to the run's stdout), on this host and on the others.
    assert remote == ("remote ranks see: NCCL_DEBUG=INFO NCCL_ALGO=Ring NCCL_DEBUG=INFO NCCL_DEBUG_FILE= "
                      "NCCL_DEBUG_SUBSYS=INIT,BOOTSTRAP,ENV,NET")
    assert single.startswith("single NCCL_DEBUG=INFO NCCL_SOCKET_IFNAME=eth1 NCCL_DEBUG_FILE=[] "
                             "-b 8 -e 1G -f 2 -g 1 -n 20 -w 5 -c 1 -J /tmp/")
    assert multi_call.startswith("multi NCCL_DEBUG=INFO NCCL_SOCKET_IFNAME=eth1 NCCL_DEBUG_FILE=[] -x NCCL_DEBUG "
                                 "-x NCCL_ALGO -x NCCL_DEBUG -x NCCL_DEBUG_FILE -x NCCL_DEBUG_SUBSYS "
                                 "/opt/standin/pass/all_reduce_perf -b 8 -e 1G -f 2 -g 1 ")
    assert " -J /tmp/" in multi_call
    # The scratch folders are gone from the hosts.
    assert run_in(lab, "node1", scratch) == scratch_before
    # The plot is made from this report.
    plotted = subprocess.run([sys.executable, "-m", "ncclkit.cli", "report", str(folder)],
                             capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")},
                             check=False)
    assert plotted.returncode == 0, plotted.stderr
    assert (folder / "busbw.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_hang_and_low_busbw_fail_with_the_cause_and_the_numbers(lab, tmp_path):
    facts = contract_facts("slow", nccl_validate_timeout_s=2, nccl_validate_min_busbw_gbps=3.0,
                           ncclkit_cluster_network=f"198.19.{INDEX}.0/24")
    facts["ncclkit_nccl_tests"]["version"] = "2.16.9"  # before -J
    started = time.monotonic()
    done, folder = validate(lab, tmp_path, facts)
    assert done.rc != 0 and time.monotonic() - started < 120
    tail = failure_tail(done)
    assert "nccl_validate FAILED: 3 run(s), 1 passed" in tail
    assert "single-node on node2: all_reduce_perf did not finish within 2 s and was stopped: it hung" in tail
    # What it printed before it hung names the cause.
    for node in ("node0", "node1"):
        assert (f"  {node}: NCCL uses lo 127.0.0.1 for bootstrap, outside the cluster network 198.19.60.0/24: "
                "it picked the wrong NIC") in tail
    assert "multi-node across node1, node2: busbw 2.99 GB/s at 536870912 B is below min_busbw_gbps 3" in tail
    # The fail message is the play's last output before the recap, and ends with the report.
    assert done.stdout.split("PLAY RECAP")[0].rstrip().splitlines()[-1].strip() == f"report: {folder}"
    report = report_of(folder)
    runs = runs_by_title(report)
    assert runs["single-node on node1"]["passed"] and runs["single-node on node2"]["rc"] == 124
    assert [line for line in report["reasons"] if not line.startswith("  ")] == [
        "single-node on node2: all_reduce_perf did not finish within 2 s and was stopped: it hung (across nodes "
        "usually NCCL or Gloo on the wrong NIC, or blocked ports; see the findings)",
        "multi-node across node1, node2: busbw 2.99 GB/s at 536870912 B is below min_busbw_gbps 3"]
    assert all("-J" not in run["command"] for run in report["runs"]) and not list(folder.glob("raw/*/*.json"))
    assert (folder / "raw/node2/single.txt").read_bytes() == DEBUG_INFO_HEAD
    assert run_in(lab, "node2", "pgrep -f '^sleep 3599' || true").strip() == ""  # the hung process is gone


def test_a_dead_run_and_a_binary_without_mpi_fail_with_their_failures(lab, tmp_path):
    # The nccl_tests role's build predates -J, but the binary run is the one nccl_validate_bin_dir
    # names: its version is unknown, so it is asked with -h.
    facts = contract_facts("broken", nccl_validate_bin_dir="/opt/standin/broken")
    facts["ncclkit_nccl_tests"]["version"] = "2.16.9"
    done, folder = validate(lab, tmp_path, facts)
    assert done.rc != 0
    tail = failure_tail(done)
    assert "single-node on node2: the run is incomplete, it failed: node0: Test NCCL failure" in tail
    assert "  node0: NCCL found no network interface to use" in tail  # nccl_diagnose's cause
    assert "multi-node across node1, node2: 1 ranks on 1 host(s) (vm), expected_ranks is 2" in tail
    assert "built without MPI=1" in tail
    runs = runs_by_title(report_of(folder))
    killed = runs["single-node on node1"]
    assert killed["rc"] == 137 and killed["timed_out"] is False and not killed["passed"]
    assert killed["reasons"][0].startswith("single-node on node1: all_reduce_perf was killed by signal 9 after ")
    assert "before the 300 s timeout: out of memory?" in killed["reasons"][0] and "hung" not in tail
    single = runs["single-node on node2"]
    assert single["rc"] == 3 and single["perf"]["complete"] is False
    assert {finding["code"] for finding in single["diagnosis"]["findings"]} >= {"no_socket_interface",
                                                                                "test_nccl_failure"}
    assert (folder / "raw/node2/single.txt").read_bytes() == BAD_IFNAME.read_bytes()
    multi = runs["multi-node across node1, node2"]
    assert multi["perf"]["run_count"] == 2 and not multi["passed"]
    assert multi["command"][-2] == "-J"  # the stand-in's -h lists --output_file


def test_gpus_without_nccl_tests_fail_before_running_anything(lab, tmp_path):
    facts = contract_facts("pass")
    facts["ncclkit_nccl_tests"] = {"available": False, "reason": "nvcc not found", "bin_dir": ""}
    done, folder = validate(lab, tmp_path, facts)
    assert done.rc != 0
    tail = failure_tail(done)
    for title in ("single-node on node1", "single-node on node2", "multi-node across node1, node2"):
        assert (f"{title}: not run: nccl-tests is not available (nvcc not found): run the nccl_tests role, or "
                "set nccl_validate_bin_dir to a folder holding all_reduce_perf") in tail
    report = report_of(folder)
    assert [run["ran"] for run in report["runs"]] == [False, False, False] and not list(folder.glob("raw/*"))


def test_hosts_without_gpu_skip_the_gpu_checks_and_pass_with_the_network_facts(lab, tmp_path):
    network = {"port_range": [32768, 60999], "master_port": 29500, "extra_ports": [], "firewall": "nftables",
               "reachability": {}, "verdicts": [], "passed": True}
    done, folder = validate(lab, tmp_path, {"ncclkit_network": network,
                                            "nccl_preflight_gpu_absent_reason": "nvidia-smi not found"})
    assert done.rc == 0, done.stdout[-3000:]
    assert "GPU checks skipped: no host has a GPU" in done.stdout
    report = report_of(folder)
    assert report["passed"] and report["runs"] == []
    # The Gloo run needs the profile's launcher, which this play does not have: a note, not a failure.
    assert report["notes"] == ["GPU checks skipped on node1, node2: nvidia-smi not found",
                               "Gloo all-reduce across node1, node2 skipped: node1: no launcher: "
                               "ncclkit_launch.torchrun is not set; run the nccl_profile role; node2: no launcher: "
                               "ncclkit_launch.torchrun is not set; run the nccl_profile role"]
    assert report["network"] == {"node1": network, "node2": network}
    assert "## Network (nccl_network)" in (folder / "report.md").read_text()


def test_check_mode_runs_nothing_and_writes_nothing(lab, tmp_path):
    before = run_in(lab, "node1", f"cat {STANDIN_LOG} 2>/dev/null || true")
    done, folder = validate(lab, tmp_path, contract_facts("pass"), "--check")
    assert done.rc == 0, done.stdout[-3000:]
    assert folder is None and not (tmp_path / "ncclkit-report").exists()
    said = " ".join(done.stdout.split())  # the callback wraps long messages
    assert "check mode: nccl_validate runs nothing and writes no report" in said
    assert ("It would run all_reduce_perf over 1 GPU(s) on node2 and, from node1, across node1, node2 with "
            "/opt/ncclkit/bin/ncclkit-mpirun (2 ranks)") in said
    assert run_in(lab, "node1", f"cat {STANDIN_LOG} 2>/dev/null || true") == before
