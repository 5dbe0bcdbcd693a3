"""The Gloo validation of hosts without GPU: the result lines of the ranks, the combined outcome of
every host's part, the report's verdict, and the bounded run that takes a hang's evidence."""

import json
import os
import sys
import time

import pytest

from ansible_collections.ncclkit.cluster.plugins.filter.validate import combined_run
from ansible_collections.ncclkit.cluster.plugins.module_utils import report as nccl_report
from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.bounded_run import run_bounded
from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.gloo import gloo_perf, rank_results


def result(rank, busbw=1.5, correct=True, host=None):
    return "ncclkit-gloo " + json.dumps({"rank": rank, "world": 2, "host": host or f"node{rank + 1}",
                                         "bytes": 4194304, "iters": 10, "seconds": 0.0056, "algbw_gbps": busbw,
                                         "busbw_gbps": busbw, "correct": correct, "torch": "2.13.0+cpu"})


def test_result_lines_are_found_behind_prefixes_and_broken_ones_ignored():
    lines = ["[1,0]<stdout>: " + result(0), "ncclkit-gloo {\"rank\": 1, \"busbw_gbps\": \"fast\"}",
             "ncclkit-gloo {not json", result(1, busbw=2.0)]
    assert [found["rank"] for found in rank_results(lines)] == [0, 1]


def test_every_rank_correct_passes_with_the_slowest_rank_as_the_bandwidth():
    facts = gloo_perf([result(0, busbw=2.0), result(1, busbw=1.25)], expected_ranks=2, min_busbw_gbps=1.0)
    assert facts["passed"] and facts["ranks"] == 2 and facts["hosts"] == ["node1", "node2"]
    assert facts["peak_busbw_gbps"] == 1.25 and facts["bytes"] == 4194304


@pytest.mark.parametrize("lines, expected, floor, failed, words", [
    ([result(0)], 2, None, "expected_ranks", "missing: rank(s) 1"),
    ([result(0), result(1, correct=False)], 2, None, "correct", "wrong sums on rank(s) 1"),
    ([result(0, busbw=0.5), result(1)], 2, 1.0, "min_busbw", "busbw 0.5 GB/s (slowest rank)"),
    ([], 2, None, "correct", "no rank checked its result"),
])
def test_each_gate_fails_with_its_numbers(lines, expected, floor, failed, words):
    facts = gloo_perf(lines, expected_ranks=expected, min_busbw_gbps=floor)
    assert not facts["passed"]
    gate = next(gate for gate in facts["gates"] if gate["name"] == failed)
    assert not gate["passed"] and words in gate["message"]


def test_a_timeout_anywhere_is_the_run_s_outcome_and_the_first_failure_s_tail_is_kept():
    results = [{"rc": 1, "timed_out": False, "duration_s": 3.0, "forensics": [], "stderr_lines": ["boom"]},
               {"rc": 124, "timed_out": True, "duration_s": 30.5, "forensics": ["ncclkit-forensics: rank=1"]},
               {}]
    outcome = combined_run(results, ["node1", "node2", "node3"])
    assert outcome["rc"] == 124 and outcome["timed_out"] and outcome["duration_s"] == 30.5
    assert outcome["forensics"] == ["ncclkit-forensics: rank=1"] and outcome["stderr_tail"] == ["node1: boom"]
    assert combined_run([{"rc": 0}, {"rc": 0}], ["a", "b"])["rc"] == 0
    assert combined_run([{"rc": 0}, {}], ["a", "b"])["rc"] == -1  # a host without a result


def gloo_record(**fields):
    record = {"name": "gloo", "host": "node1", "hosts": ["node1", "node2"], "command": ["ncclkit-torchrun"],
              "ran": True, "rc": 0, "timeout_s": 300, "duration_s": 9.0, "expected_ranks": 2,
              "perf": gloo_perf([result(0), result(1)], 2), "diagnosis": None, "stderr_tail": [], "raw": []}
    record.update(fields)
    return record


NO_GPU = {"gpus": 0, "skip_reason": "nvidia-smi not found"}


def test_the_report_of_a_gloo_run_says_nccl_was_not_exercised():
    report = nccl_report.build_report({"hosts": {"node1": NO_GPU, "node2": NO_GPU}, "runs": [gloo_record()],
                                       "plan": {"gloo": True}})
    assert report["verdict"] == "passed"
    assert nccl_report.summary_line(report) == ("nccl_validate PASSED: 1 run(s), 1 passed (Gloo/CPU: NCCL not "
                                                "exercised; GPU checks skipped: no host has a GPU)")
    markdown = nccl_report.render_markdown(report)
    assert "## Gloo all-reduce across node1, node2: PASSED" in markdown
    assert "Gloo/CPU: NCCL not exercised; busbw 1.5 GB/s at 4 MiB" in markdown


def test_a_gloo_run_that_hung_or_never_ran_fails_and_says_so():
    hung = gloo_record(rc=124, timed_out=True, duration_s=300.2, perf=gloo_perf([], 2))
    report = nccl_report.build_report({"hosts": {"node1": NO_GPU, "node2": NO_GPU}, "runs": [hung]})
    assert report["reasons"][0].startswith("Gloo all-reduce across node1, node2: the Gloo all-reduce did not "
                                           "finish within 300 s and was stopped: it hung")
    killed = gloo_record(rc=1, perf=gloo_perf([], 2))
    reasons = nccl_report.build_report({"hosts": {"node1": NO_GPU}, "runs": [killed]})["reasons"]
    assert "0 of 2 rank(s) reported a result" in reasons[0] and "nccl-tests" not in reasons[0]
    missing = nccl_report.build_report({"hosts": {"node1": NO_GPU, "node2": NO_GPU}, "runs": [],
                                        "plan": {"gloo": True}})
    assert missing["verdict"] == "failed" and "Gloo all-reduce: planned but never run" in missing["reasons"][0]


def test_a_run_within_its_deadline_gives_its_own_code(tmp_path):
    done = run_bounded([sys.executable, "-c", "import sys; print('out'); sys.exit(3)"],
                       str(tmp_path / "out"), str(tmp_path / "err"), timeout_s=30)
    assert done["rc"] == 3 and not done["timed_out"] and done["forensics"] == []
    assert (tmp_path / "out").read_text() == "out\n" and oct((tmp_path / "out").stat().st_mode & 0o777) == "0o600"


def test_a_stopped_rank_is_described_before_the_tree_is_killed(tmp_path):
    # A launcher (sh) with a rank that stops itself, as a rank frozen by SIGSTOP would sit.
    script = "import os, signal, time; os.kill(os.getpid(), signal.SIGSTOP); time.sleep(60)"
    started = time.monotonic()
    # The launcher writes on its way out, as torchrun does when TERM reaches it.
    launcher = f"trap 'echo launcher stopping >&2; exit 143' TERM; {sys.executable} -c {script!r} & wait; echo never"
    done = run_bounded(["sh", "-c", launcher],
                       str(tmp_path / "out"), str(tmp_path / "err"), timeout_s=2, kill_after_s=2,
                       env={**os.environ, "RANK": "3"}, ras_wait_s=0.1)
    assert done["timed_out"] and done["rc"] in (124, 137) and time.monotonic() - started < 20
    rank = [line for line in done["forensics"] if "rank=3" in line]
    assert rank and "state=T (stopped)" in rank[0], done["forensics"]
    # Kept in the log after everything the dying tree wrote there.
    log = (tmp_path / "err").read_text()
    assert rank[0] in log and "launcher stopping" in log
    assert "never" not in (tmp_path / "out").read_text()
    pid = int(rank[0].split("pid=")[1].split()[0])
    assert gone_or_zombie(pid)


def gone_or_zombie(pid, limit_s=5.0):
    """Killed: its parent (the launcher) died too, so the kernel's reaper may not have reaped it yet."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return True
        except OSError:
            return True
        time.sleep(0.1)
    return False


def test_a_gloo_run_the_cluster_cannot_make_is_a_note_unless_it_was_asked_for():
    cannot = gloo_record(ran=False, not_run_reason="node2: python3 has no torch with Gloo", optional=True)
    report = nccl_report.build_report({"hosts": {"node1": NO_GPU, "node2": NO_GPU}, "runs": [cannot],
                                       "plan": {"gloo": True}})
    assert report["passed"] and report["verdict"] == "skipped" and report["runs"] == []
    assert ("Gloo all-reduce across node1, node2 skipped: node2: python3 has no torch with Gloo"
            in report["notes"])
    asked = nccl_report.build_report({"hosts": {"node1": NO_GPU, "node2": NO_GPU},
                                      "runs": [dict(cannot, optional=False)], "plan": {"gloo": True}})
    assert asked["verdict"] == "failed"
    assert asked["reasons"] == ["Gloo all-reduce across node1, node2: not run: node2: python3 has no torch with Gloo"]
