"""The nccl_validate report: verdicts from run records built on real samples, report.md, the
atomic write and reading it back."""

import json
import os
import re

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils import report as nccl_report
from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.log import read_nccl_log_files
from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests.output import parse_file, summarize
from conftest import SAMPLES

HOST = {"gpus": 1, "gpu_names": ["NVIDIA H200"], "skip_reason": "", "nccl_tests": {"version": "2.19.6"}}


def perf(name, **gates):
    return summarize(parse_file(str(SAMPLES / name)), **gates)


def run(name="multi", host="node1", **fields):
    record = {"name": name, "host": host, "hosts": ["node1", "node2"] if name == "multi" else [host],
              "command": ["/opt/ncclkit/bin/ncclkit-mpirun", "all_reduce_perf", "-g", "1"], "ran": True, "rc": 0,
              "timeout_s": 300, "duration_s": 12.5, "expected_ranks": 2, "perf": None, "perf_error": None,
              "diagnosis": None, "stderr_tail": [], "raw": ["raw/node1/multi.txt"]}
    record.update(fields)
    return record


def diagnosis(name):
    found = read_nccl_log_files([SAMPLES / name])
    return {"findings": found["findings"], "hosts": found["hosts"]}


def report_of(*runs, hosts=None, **data):
    return nccl_report.build_report(dict(hosts=hosts or {"node1": HOST, "node2": HOST}, runs=list(runs), **data),
                                    created="2026-12-02T09:05:00Z")


def test_a_passing_multi_node_run():
    report = report_of(run(perf=perf("h200-2host-socket-defaults.txt", expected_ranks=2, min_busbw_gbps=2.5)))
    assert report["passed"] and report["verdict"] == "passed" and report["reasons"] == []
    assert report["runs"][0]["title"] == "multi-node across node1, node2" and report["runs"][0]["passed"]
    assert nccl_report.summary_line(report) == "nccl_validate PASSED: 1 run(s), 1 passed"


def test_a_gate_failure_names_the_numbers():
    report = report_of(run(perf=perf("h200-2host-socket-defaults.txt", expected_ranks=2, min_busbw_gbps=3)))
    assert report["reasons"] == [
        "multi-node across node1, node2: busbw 2.99 GB/s at 536870912 B is below min_busbw_gbps 3"]


def test_too_few_ranks_hint_at_a_binary_without_mpi():
    report = report_of(run(perf=perf("perf-eks-efa-a10g-1rank-cut.txt", expected_ranks=2)))
    reason, = report["reasons"]
    assert "1 ranks on 1 host(s) (test-nccl-worker-0), expected_ranks is 2" in reason
    assert "built without MPI=1" in reason and "no 'Avg bus bandwidth' footer" in reason


def test_a_failed_run_carries_the_diagnosis_under_its_reason():
    report = report_of(run(rc=3, perf=perf("h200-2host-bad-socket-ifname.txt", expected_ranks=2),
                           diagnosis=diagnosis("h200-2host-bad-socket-ifname.txt")))
    first, *diagnosed = report["reasons"]
    assert first.startswith("multi-node across node1, node2: the run is incomplete, it failed: node0: Test NCCL")
    assert diagnosed[0].startswith("  node0: NCCL found no network interface to use")
    assert " -> set NCCL_SOCKET_IFNAME to the cluster NIC" in diagnosed[0]


def test_a_timeout_is_a_hang_whatever_was_printed():
    report = report_of(run(rc=124, timeout_s=5, duration_s=5.1,
                           perf_error="the input is empty: no nccl-tests output to read"))
    reason, = report["reasons"]
    assert reason.startswith("multi-node across node1, node2: all_reduce_perf did not finish within 5 s and "
                             "was stopped: it hung")
    assert report["runs"][0]["timed_out"] is True
    killed = report_of(run(rc=137, timeout_s=5, duration_s=15.2,
                           perf=perf("h200-2host-bad-socket-ifname.txt", expected_ranks=2)))
    assert "did not finish" in killed["reasons"][0] and len(killed["reasons"]) == 1  # no rows: no gate line


def test_a_kill_before_the_timeout_is_not_a_hang():
    report = report_of(run(rc=137, timeout_s=300, duration_s=3.0, perf_error="the input is empty"))
    assert report["reasons"] == ["multi-node across node1, node2: all_reduce_perf was killed by signal 9 after "
                                 "3.0 s, before the 300 s timeout: out of memory? (see dmesg on the host; lower "
                                 "nccl_validate_max_bytes)"]
    assert report["runs"][0]["timed_out"] is False
    assert report_of(run(rc=137, duration_s=None))["runs"][0]["timed_out"] is False
    assert report_of(run(rc=124))["runs"][0]["timed_out"] is True  # timeout's own code, whatever the duration


def test_no_result_says_why_with_the_end_of_stderr():
    report = report_of(run(name="single", rc=127, perf_error="the input is empty",
                           stderr_tail=["sh: 1: /opt/x/all_reduce_perf: not found"]))
    assert report["reasons"] == ["single-node on node1: no nccl-tests result (rc 127): the input is empty",
                                 "  stderr: sh: 1: /opt/x/all_reduce_perf: not found"]


def test_a_complete_run_with_a_bad_exit_code_fails():
    report = report_of(run(rc=1, perf=perf("h200-2host-socket-defaults.txt", expected_ranks=2)))
    assert report["reasons"] == ["multi-node across node1, node2: the benchmark printed a complete run but exited "
                                 "with rc 1"]


def test_runs_that_could_not_start_hosts_without_data_and_the_network():
    network = {"node1": {"passed": False, "verdicts": [{"message": "node1 -> node2 port 29500 refused"}]},
               "node2": {}}
    report = report_of(run(ran=False, not_run_reason="no launcher for the multi-node run"),
                       hosts={"node1": HOST, "node2": {}}, network=network)
    assert report["reasons"] == [
        "multi-node across node1, node2: not run: no launcher for the multi-node run",
        "network (node1): node1 -> node2 port 29500 refused",
        "node2: no validation data: the host failed or was unreachable before nccl_validate ran (see the play's "
        "output)"]
    assert report["network"] == {"node1": network["node1"]} and report["network_passed"] is False


def test_no_gpu_anywhere_passes_and_says_the_checks_were_skipped():
    no_gpu = {"gpus": 0, "skip_reason": "nvidia-smi not found"}
    report = report_of(hosts={"node1": no_gpu, "node2": no_gpu},
                       network={"node1": {"passed": True, "verdicts": []}})
    assert report["passed"] and report["notes"] == ["GPU checks skipped on node1, node2: nvidia-smi not found"]
    assert nccl_report.summary_line(report).endswith("(GPU checks skipped: no host has a GPU)")
    # Nothing ran: SKIPPED, never PASSED.
    assert report["verdict"] == "skipped"
    assert nccl_report.summary_line(report).startswith("nccl_validate SKIPPED: 0 run(s), 0 passed")
    markdown = nccl_report.render_markdown(report)
    assert "| node1 | 0 | not available | skipped: nvidia-smi not found |" in markdown
    assert "- node1: passed\n" in markdown


def test_gpu_hosts_whose_runs_did_not_happen_are_not_skipped_checks():
    plan = {"single": ["node1", "node2"], "multi": True, "multi_hosts": ["node1", "node2"], "launch_host": "node1"}
    report = report_of(plan=plan)
    assert not report["passed"]
    assert "GPU checks skipped" not in nccl_report.summary_line(report)
    assert nccl_report.summary_line(report) == "nccl_validate FAILED: 0 run(s), 0 passed"
    unreachable = report_of(hosts={"node1": {}, "node2": {"gpus": 0, "skip_reason": "nvidia-smi not found"}})
    assert nccl_report.summary_line(unreachable) == "nccl_validate FAILED: 0 run(s), 0 passed"


def test_planned_runs_without_a_record_fail_the_report():
    plan = {"single": ["node1", "node2", "node3"], "multi": True, "multi_hosts": ["node1", "node2", "node3"],
            "launch_host": "node1"}
    report = report_of(run(name="single", host="node2", perf=perf("h200-1gpu-all_reduce_perf.txt")),
                       hosts={"node1": HOST, "node2": HOST, "node3": {}}, plan=plan)
    assert not report["passed"]
    assert report["reasons"] == [
        "node3: no validation data: the host failed or was unreachable before nccl_validate ran (see the play's "
        "output)",
        "single-node on node1: planned but never run: the host failed before its run (see the play's output)",
        "multi-node across node1, node2, node3: planned but never run: the launch host node1 failed before it "
        "(see the play's output)"]
    complete = report_of(run(name="single", host="node1", perf=perf("h200-1gpu-all_reduce_perf.txt")),
                         run(perf=perf("h200-2host-socket-defaults.txt", expected_ranks=2)),
                         plan={"single": ["node1"], "multi": True})
    assert complete["passed"], complete["reasons"]


@pytest.mark.parametrize("data, message", [
    ({"runs": [None]}, "runs must hold dicts, not None"),
    ({"runs": "x"}, "runs must be a list, not str"),
    ({"hosts": ["a"]}, "hosts must be a dict, not list"),
    ({"hosts": {"a": "x"}}, "hosts must hold dicts, not 'x'"),
    ({"network": {"a": 1}}, "network must hold dicts, not 1"),
    ({"plan": []}, "plan must be a dict, not list"),
    ("x", "must be a dict with hosts, runs"),
])
def test_malformed_data_is_a_clear_error_not_a_traceback(data, message):
    with pytest.raises(nccl_report.NcclReportError, match=re.escape(message)):
        nccl_report.build_report(data)


def test_single_node_runs_come_first():
    report = report_of(run(), run(name="single", host="node2"), run(name="single", host="node1"))
    assert [item["title"] for item in report["runs"]] == [
        "single-node on node1", "single-node on node2", "multi-node across node1, node2"]


def test_markdown_has_the_verdict_reasons_gates_rows_and_raw_links():
    report = report_of(run(perf=perf("h200-2host-socket-defaults.txt", expected_ranks=2, min_busbw_gbps=3)))
    markdown = nccl_report.render_markdown(report)
    assert markdown.startswith("# ncclkit validation report: FAILED\n")
    assert "## Why it failed\n\n- multi-node across node1, node2: busbw 2.99 GB/s" in markdown
    assert "| min_busbw_gbps | 3 | 2.99 | FAIL: busbw 2.99 GB/s at 536870912 B is below min_busbw_gbps 3 |" in markdown
    assert "| 512 MiB | 179339 | 2.99 | 2.99 | 2.94 | 0 |" in markdown
    assert "[raw/node1/multi.txt](raw/node1/multi.txt)" in markdown
    assert "Command: `/opt/ncclkit/bin/ncclkit-mpirun all_reduce_perf -g 1`" in markdown


def test_markdown_says_when_the_rows_are_the_first_of_more(monkeypatch):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests import rows as nccl_tests_rows
    monkeypatch.setattr(nccl_tests_rows, "MAX_KEPT_ROWS", 2)
    markdown = nccl_report.render_markdown(report_of(run(perf=perf("h200-2host-socket-defaults.txt"))))
    assert "| 8 MiB |" in markdown and "| 512 MiB |" not in markdown
    assert "The first 2 of 4 rows; the gates above read them all." in markdown
    monkeypatch.undo()
    whole = nccl_report.render_markdown(report_of(run(perf=perf("h200-2host-socket-defaults.txt"))))
    assert "| 512 MiB |" in whole and "The first" not in whole


def test_human_sizes():
    assert [nccl_report.human_size(size) for size in (8, 1024, 3 << 20, 1 << 30, 1536, None)] == [
        "8 B", "1 KiB", "3 MiB", "1 GiB", "1536 B", "?"]


def test_write_is_atomic_and_never_overwrites(tmp_path):
    report = report_of(run(perf=perf("h200-2host-socket-defaults.txt")))
    staging = nccl_report.stage(str(tmp_path), "20261202T090419Z")
    assert re.fullmatch(r"\.20261202T090419Z\.[a-z0-9_]{8}\.partial", os.path.basename(staging))
    os.mkdir(os.path.join(staging, "raw", "node1"))
    with open(os.path.join(staging, "raw", "node1", "multi.txt"), "w") as stream:
        stream.write("output")
    final = nccl_report.write_report(str(tmp_path), "20261202T090419Z", report, staging=staging)
    assert final == str(tmp_path / "20261202T090419Z") and not os.path.exists(staging)
    assert sorted(os.listdir(final)) == ["raw", "report.html", "report.json", "report.md"]
    assert nccl_report.load_report(final) == json.loads(json.dumps(report))
    again = nccl_report.write_report(str(tmp_path), "20261202T090419Z", report)
    assert again == str(tmp_path / "20261202T090419Z-2")


def test_a_failed_write_leaves_nothing(tmp_path):
    report = report_of(run(perf=perf("h200-2host-socket-defaults.txt")))
    report["settings"] = {"not json": float("nan")}
    with pytest.raises(nccl_report.NcclReportError, match="nothing was left behind"):
        nccl_report.write_report(str(tmp_path), "20261202T090419Z", report)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("name", ["", ".hidden", "a/b"])
def test_report_names_are_plain(tmp_path, name):
    with pytest.raises(nccl_report.NcclReportError, match="plain folder name"):
        nccl_report.stage(str(tmp_path), name)


def test_reading_a_report_back_fails_clearly(tmp_path):
    with pytest.raises(nccl_report.NcclReportError, match="does not exist: pass a folder that nccl_validate wrote"):
        nccl_report.load_report(str(tmp_path))
    (tmp_path / "report.json").write_text("{not json")
    with pytest.raises(nccl_report.NcclReportError, match="cannot read"):
        nccl_report.load_report(str(tmp_path))
    (tmp_path / "report.json").write_text('{"runs": []}')
    with pytest.raises(nccl_report.NcclReportError, match="not an ncclkit report"):
        nccl_report.load_report(str(tmp_path))


def test_bandwidth_series_come_from_the_rows():
    report = report_of(run(perf=perf("h200-2host-socket-defaults.txt")),
                       run(name="single", perf=perf("h200-1gpu-all_reduce_perf.txt")), run(name="single", host="node2"))
    single, multi = nccl_report.bandwidth_series(json.loads(json.dumps(report)))
    assert multi == {"label": "multi-node across node1, node2", "sizes": [1048576, 8388608, 67108864, 536870912],
                     "busbw": [2.22, 3.13, 3.29, 2.99], "algbw": [2.22, 3.13, 3.29, 2.99]}
    assert single["label"] == "single-node on node1" and single["sizes"][0] == 8
    with pytest.raises(nccl_report.NcclReportError, match="no measured rows"):
        nccl_report.bandwidth_series(report_of(run(name="single", host="node2")))


def test_raw_json_in_the_report_keeps_only_allowed_environment(tmp_path):
    """nccl-tests' -J file holds the launching environment; the sample has a planted secret."""
    staging = nccl_report.stage(str(tmp_path), "20261202T090419Z")
    raw = os.path.join(staging, "raw", "node1")
    os.makedirs(raw)
    source = json.loads((SAMPLES / "h200-1gpu-all_reduce_perf.json").read_text())
    assert any(entry.startswith("AWS_SECRET_ACCESS_KEY=") for entry in source["env"])
    with open(os.path.join(raw, "single.json"), "w") as stream:
        json.dump(source, stream)
    with open(os.path.join(raw, "cut.json"), "w") as stream:
        stream.write('{"version": 3, "env": ["NCCL_DEBUG=INFO", "AWS_SECRET_ACCESS_KEY=x')  # cut short
    final = nccl_report.write_report(str(tmp_path), "20261202T090419Z", report_of(run()), staging=staging)
    written = json.loads(open(os.path.join(final, "raw", "node1", "single.json")).read())
    assert written["env"] and all(entry.split("=")[0].startswith(("NCCL_", "CUDA_")) for entry in written["env"])
    assert written["env_removed_by_ncclkit"] == len(source["env"]) - len(written["env"])
    assert written["results"] == source["results"]
    assert "AWS_SECRET" not in json.dumps(written)
    cut = open(os.path.join(final, "raw", "node1", "cut.json")).read()
    assert cut == '{"version": 3, "env": ["NCCL_DEBUG=INFO"]'  # the cut-off entry is dropped


def test_hosts_table_names_a_build_given_by_folder():
    given = dict(HOST, nccl_tests={"available": False, "version": ""}, bin_dir="/opt/build/bin", bin_dir_given=True)
    missing = dict(HOST, nccl_tests={"available": False, "version": ""}, bin_dir="")
    text = nccl_report.render_markdown(report_of(run(), hosts={"node1": given, "node2": missing}))
    assert "| node1 | 1 (NVIDIA H200) | given: /opt/build/bin | run |" in text
    assert "| node2 | 1 (NVIDIA H200) | not available | run |" in text
    # A folder given by nccl_validate_bin_dir is named even where the nccl_tests role built one too.
    overridden = dict(HOST, bin_dir="/opt/mine", bin_dir_given=True)
    text = nccl_report.render_markdown(report_of(run(), hosts={"node1": overridden, "node2": HOST}))
    assert "| node1 | 1 (NVIDIA H200) | given: /opt/mine | run |" in text


def test_network_verdicts_every_host_carries_are_said_once():
    verdict = {"message": "node2 drops ports 40000-40010 from node1 (nftables)"}
    network = {host: {"passed": False, "verdicts": [verdict]} for host in ("node1", "node2")}
    report = report_of(run(perf=perf("h200-2host-socket-defaults.txt")), network=network)
    assert report["reasons"] == ["network (node1): " + verdict["message"]]
    assert nccl_report.render_markdown(report).count(verdict["message"]) == 2  # reasons + section


def test_network_verdicts_stored_once_on_the_report_host_are_said_once():
    verdict = {"message": "node2 drops ports 40000-40010 from node1 (nftables)"}
    matrix = [{"source": "node1", "target": "node2", "status": "error"}]
    network = {"node1": {"passed": False, "report_host": "node1", "verdicts": [verdict], "reachability": matrix},
               "node2": {"passed": False, "report_host": "node1"}}
    report = report_of(run(perf=perf("h200-2host-socket-defaults.txt")), network=network)
    assert report["reasons"] == ["network (node1): " + verdict["message"]]
    # A host whose report host is not in the report still says that the network failed.
    alone = report_of(run(perf=perf("h200-2host-socket-defaults.txt")), network={"node2": network["node2"]})
    assert alone["reasons"] == ["network (node2): nccl_network reported a failure"]


def test_stale_staging_folders_of_interrupted_plays_are_removed(tmp_path):
    old = tmp_path / ".20261201T090419Z.partial" / "raw" / "node1"
    old.mkdir(parents=True)
    (old / "single.json").write_text('{"env": ["AWS_SECRET_ACCESS_KEY=x"]}')
    recent = tmp_path / ".20261202T080000Z.partial"
    recent.mkdir()
    old_random = tmp_path / ".20261130T090419Z.ab12cd_3.partial"
    old_random.mkdir()
    other = tmp_path / ".mine.partial"
    other.mkdir()
    day_ago = os.path.getmtime(old) - nccl_report.STALE_STAGING_S - 60
    for path in (old / "single.json", old, old.parent, old.parent.parent, old_random, other):
        os.utime(path, (day_ago, day_ago))
    staging = nccl_report.stage(str(tmp_path), "20261202T090419Z")
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted([
        ".20261202T080000Z.partial", os.path.basename(staging), ".mine.partial"])


# -- secrets and staging (issue: hardening) ------------------------------------------------


def _mode(path):
    return os.stat(path).st_mode & 0o777


def test_staging_is_private_and_unique_per_run(tmp_path):
    """Two runs in the same second get their own staging folders, readable by the owner only."""
    first = nccl_report.stage(str(tmp_path), "20261202T090419Z")
    second = nccl_report.stage(str(tmp_path), "20261202T090419Z")
    assert first != second and os.path.isdir(first) and os.path.isdir(second)
    for folder in (first, second, os.path.join(first, "raw")):
        assert _mode(folder) == 0o700, oct(_mode(folder))
    # Each run writes its own report: neither takes the other's raw outputs.
    for staging, host in ((first, "node1"), (second, "node2")):
        os.makedirs(os.path.join(staging, "raw", host))
        with open(os.path.join(staging, "raw", host, "single.txt"), "w") as stream:
            stream.write(host)
    done = [nccl_report.write_report(str(tmp_path), "20261202T090419Z", report_of(run()), staging=staging)
            for staging in (first, second)]
    assert sorted(os.path.basename(path) for path in done) == ["20261202T090419Z", "20261202T090419Z-2"]
    assert [os.listdir(os.path.join(path, "raw")) for path in done] == [["node1"], ["node2"]]
    assert sorted(os.listdir(tmp_path)) == ["20261202T090419Z", "20261202T090419Z-2"]


def test_report_files_are_written_for_the_owner_only(tmp_path):
    staging = nccl_report.stage(str(tmp_path), "20261202T090419Z")
    os.makedirs(os.path.join(staging, "raw", "node1"))
    with open(os.path.join(staging, "raw", "node1", "single.json"), "w") as stream:
        stream.write('{"env": ["NCCL_DEBUG=INFO"]}')
    final = nccl_report.write_report(str(tmp_path), "20261202T090419Z", report_of(run()), staging=staging)
    for folder, dummy, files in os.walk(final):
        assert _mode(folder) == 0o700, folder
        for name in files:
            assert _mode(os.path.join(folder, name)) == 0o600, name


def test_a_staging_folder_that_is_not_ours_is_refused(tmp_path):
    other = tmp_path / "elsewhere"
    other.mkdir()
    with pytest.raises(nccl_report.NcclReportError, match="not a staging folder of this report"):
        nccl_report.write_report(str(tmp_path), "20261202T090419Z", report_of(run()), staging=str(other))
    assert other.is_dir()


def deep_json(depth, env):
    return '{"env": ' + json.dumps(env) + ', "config": ' + "[" * depth + "1" + "]" * depth + "}"


def test_deeply_nested_json_is_redacted_without_recursion_errors(tmp_path):
    """json.loads raises RecursionError at about a thousand levels: the redaction must not."""
    raw = tmp_path / "single.json"
    raw.write_text(deep_json(100000, ["NCCL_DEBUG=INFO", "AWS_SECRET_ACCESS_KEY=abc", "HF_TOKEN=xyz"]))
    nccl_report.redact_raw_file(str(raw))
    text = raw.read_text()
    assert "AWS_SECRET" not in text and "HF_TOKEN" not in text and "NCCL_DEBUG=INFO" in text
    assert text.count("[") == 100000 + 1


def test_env_lists_at_any_depth_and_cut_files_are_redacted(tmp_path):
    raw = tmp_path / "single.json"
    raw.write_text('{"results": [{"env": ["NCCL_ALGO=Ring", "GITHUB_TOKEN=1", {"x": "y"}]}], '
                   '"e\\u006ev": ["MY_PASSWORD=2"], "env": ["CUDA_VISIBLE_DEVICES=0", "AWS_SECRET_ACCESS_KEY=3')
    nccl_report.redact_raw_file(str(raw))
    text = raw.read_text()
    for secret in ("GITHUB_TOKEN", "MY_PASSWORD", "AWS_SECRET", '"x"'):
        assert secret not in text
    assert "NCCL_ALGO=Ring" in text and "CUDA_VISIBLE_DEVICES=0" in text
    complete = tmp_path / "complete.json"
    complete.write_text('{"results": [{"env": ["NCCL_ALGO=Ring", "GITHUB_TOKEN=1"]}], "env": ["MY_KEY=2"]}')
    nccl_report.redact_raw_file(str(complete))
    assert json.loads(complete.read_text()) == {"results": [{"env": ["NCCL_ALGO=Ring"]}], "env": [],
                                                "env_removed_by_ncclkit": 1}


def test_a_deep_raw_file_never_leaves_an_unredacted_staging_behind(tmp_path):
    staging = nccl_report.stage(str(tmp_path), "20261202T090419Z")
    os.makedirs(os.path.join(staging, "raw", "node1"))
    with open(os.path.join(staging, "raw", "node1", "single.json"), "w") as stream:
        stream.write(deep_json(5000, ["AWS_SECRET_ACCESS_KEY=abc"]))
    final = nccl_report.write_report(str(tmp_path), "20261202T090419Z", report_of(run()), staging=staging)
    assert "AWS_SECRET" not in open(os.path.join(final, "raw", "node1", "single.json")).read()
    assert sorted(os.listdir(tmp_path)) == ["20261202T090419Z"]


def test_a_hang_names_the_stopped_rank_from_the_evidence_taken_before_the_kill():
    # The H200 recording of nccl_validate's multi-node run with rank 1 stopped (SIGSTOP) mid-run.
    found = read_nccl_log_files([SAMPLES / "h200-validate-stuck-multi.txt",
                                 SAMPLES / "h200-validate-stuck-multi.stderr.txt"])
    hung = run(rc=124, duration_s=61.2, timeout_s=60, perf=None,
               diagnosis={"findings": found["findings"], "hosts": found["hosts"]})
    passed, reasons = nccl_report.run_verdict(hung)
    assert not passed
    assert reasons[0].startswith("multi-node across node1, node2: all_reduce_perf did not finish within 60 s and "
                                 "was stopped: hang in a collective: every rank finished NCCL init")
    assert "suspect: rank 1 on node1: its process is stopped" in reasons[0]
    assert reasons[1].startswith("  fix: the network is not the cause")
    assert not any("hang in a collective" in line for line in reasons[2:])


CHANNELS = ("{host}:10:10 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/{net}/0{gdr}\n"
            "{host}:10:10 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[0] [send] via NET/{net}/1{gdr}/Shared\n")


def channel_log(tmp_path, **hosts):
    path = tmp_path / "run.txt"
    path.write_text("".join(CHANNELS.format(host=host, net=net, gdr=gdr) for host, (net, gdr) in hosts.items()))
    return {"findings": [], "hosts": read_nccl_log_files([str(path)])["hosts"]}


def test_the_report_says_whether_nccl_s_channels_used_gpudirect_rdma(tmp_path):
    found = channel_log(tmp_path, node1=("IB", "/GDRDMA"), node2=("AWS Libfabric", "/GDRDMA"))
    assert {host: facts["gpudirect_rdma"] for host, facts in found["hosts"].items()} == \
        {"node1": "in use", "node2": "in use"}
    report = report_of(run(perf=perf("h200-2host-socket-defaults.txt"), diagnosis=found))
    assert "GPUDirect RDMA: in use (node1, node2)" in nccl_report.render_markdown(report)
    assert "GPUDirect RDMA: in use (node1, node2)" in nccl_report.render_html(report)
    staged = channel_log(tmp_path, node1=("IB", "/GDRDMA"), node2=("IB", ""))
    said = nccl_report.render_markdown(report_of(run(perf=perf("h200-2host-socket-defaults.txt"), diagnosis=staged)))
    assert "GPUDirect RDMA: in use (node1); not in use (staged through host memory) (node2)" in said
    # Without NCCL's channel lines (NCCL_DEBUG below INFO) the report says nothing of it.
    quiet = report_of(run(perf=perf("h200-2host-socket-defaults.txt"), diagnosis={"findings": [], "hosts": {}}))
    assert "GPUDirect RDMA" not in nccl_report.render_markdown(quiet)
