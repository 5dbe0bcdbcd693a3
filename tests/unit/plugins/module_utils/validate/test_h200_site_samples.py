"""What site.yml and the NET/Socket grid recorded on one H200 (tests/samples/h200-site-*,
benchmarks/results/h200_socket_grid.json): the node-local NET test ran over NET/Socket as two
"nodes", the command nccl_validate ran is the one the code builds today, a second site.yml
changed nothing, and the grid's autotune decision can be made again from its JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests import output as nccl_tests_output
from ansible_collections.ncclkit.cluster.plugins.module_utils.validate import loopback as nccl_net_loopback

REPO = Path(__file__).resolve().parents[5]
SAMPLES = REPO / "tests" / "samples"
LOOPBACK = SAMPLES / "h200-site-net_loopback.txt"
REPORT = json.loads((SAMPLES / "h200-site-report.json").read_text(encoding="utf-8"))
GRID = json.loads((REPO / "benchmarks" / "results" / "h200_socket_grid.json").read_text(encoding="utf-8"))


def run(name):
    return next(r for r in REPORT["runs"] if r["name"] == name)


def test_net_loopback_ran_two_ranks_over_net_socket_on_one_gpu():
    parsed = nccl_tests_output.parse_file(str(LOOPBACK))[0]
    assert (parsed["ranks"], parsed["largest_size_bytes"], parsed["wrong_total"]) == (2, 536870912, 0)
    assert parsed["largest_size_busbw_gbps"] == 1.86
    text = LOOPBACK.read_text(encoding="utf-8")
    assert "via NET/Socket/0" in text and "NET/Socket : Using [0]eth0" in text
    assert "via P2P" not in text and "via SHM" not in text
    assert text.count("device  0 [0000:00:06] NVIDIA H200") == 2  # both ranks share GPU 0


def test_the_report_passed_both_runs():
    assert REPORT["passed"] is True
    assert {r["name"]: r["passed"] for r in REPORT["runs"]} == {"single": True, "net_loopback": True}
    assert run("net_loopback")["perf"]["peak_busbw_gbps"] == 1.86


def test_the_recorded_command_is_the_one_the_plan_builds():
    command = run("net_loopback")["command"]
    names = [command[i + 1] for i, word in enumerate(command) if word == "-x"]
    plan = nccl_net_loopback.plan({"mpicc": "/usr/bin/mpicc"}, 1, names, "eth0")
    split = command.index("env")
    launcher, program = command[:split - 2], command[split + 3:command.index(":")]
    assert launcher == plan["launcher"]
    assert command == nccl_net_loopback.mpmd_argv(launcher + program, len(launcher), plan["rank_prefixes"])
    assert "NCCL_HOSTID=ncclkit-net-loopback-0" in command and "NCCL_HOSTID=ncclkit-net-loopback-1" in command


def test_a_second_site_run_changed_nothing():
    text = (SAMPLES / "h200-site-two-runs.txt").read_text(encoding="utf-8")
    first, second = text.split("## second run")
    assert "changed=13" in first and "failed=0" in first
    assert "changed=0 " in second and "failed=0" in second
    assert text.count("nccl_validate PASSED: 2 run(s), 2 passed") == 2


def test_the_grid_holds_three_repetitions_of_every_candidate_at_512_mib():
    assert GRID["size"] == "512M" and GRID["reps"] == 3
    names = [c["name"] for c in GRID["candidates"]]
    assert names[0] == "defaults" and "common" in names and "algo=Ring proto=Simple" in names
    assert sum(name.startswith("threads=") for name in names) == 12
    for name in names:
        assert len(GRID["results"][name]) == 3 and all(v is not None for v in GRID["results"][name])
    assert all(rep["rc"] == 0 for rep in GRID["repetitions"])


def test_the_grid_decision_can_be_made_again_from_the_json():
    autotune = pytest.importorskip("ansible_collections.ncclkit.cluster.plugins.module_utils.validate.autotune")
    decision = autotune.choose(GRID["results"])
    assert decision["winner"] == GRID["decision"]["winner"] == "threads=2 socks=2"
    ratio = autotune.ratio(GRID["remeasure"]["tuned"], GRID["remeasure"]["defaults"])
    assert ratio == GRID["remeasure"]["ratio"] and ratio["low"] >= 1.0


FILES_RUNS = REPO / "benchmarks" / "results" / "h200_site_files"


def recap(name):
    line = next(line for line in (FILES_RUNS / f"{name}.log").read_text(encoding="utf-8").splitlines()
                if line.startswith("vm ") and "ok=" in line)
    return {key: int(value) for key, value in (field.split("=") for field in line.split()[2:])}


def test_site_with_one_writer_and_one_host_read_converged_on_the_h200_then_changed_nothing():
    # A fresh H200 (connection local): the profile's files through nccl_files, the host read and the
    # build tools' lookup through raw, then a second run and a --check --diff run that changed nothing.
    first, second, check = recap("site-first"), recap("site-second"), recap("site-check")
    assert first["failed"] == second["failed"] == check["failed"] == 0
    assert first["changed"] > 0 and second["changed"] == 0 and check["changed"] == 0
    log = (FILES_RUNS / "site-first.log").read_text(encoding="utf-8")
    for task in ("nccl_profile : Read the SSH user, this host's public SSH host keys, its hostname and the kept tuning",
                 "nccl_profile : Write the profile, the hostfile, the launch scripts and their folders",
                 "nccl_tests : Install | Look for the build tools"):
        assert f"TASK [ncclkit.cluster.{task}]" in log, task
    assert "nccl_validate PASSED: 2 run(s), 2 passed" in (FILES_RUNS / "site-second.log").read_text(encoding="utf-8")
