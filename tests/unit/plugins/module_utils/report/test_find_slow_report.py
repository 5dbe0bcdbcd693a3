"""When nccl_validate looks for the slow node (gate records as the real readers make them), iperf3's
--bidir JSON, and the slow-node search in the report's verdict, report.md and report.html."""

from __future__ import annotations

import json

import pytest

from ansible_collections.ncclkit.cluster.plugins.filter.validate import find_slow_decision, pair_blame
from ansible_collections.ncclkit.cluster.plugins.module_utils import report as nccl_report
from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests.output import parse_file, summarize
from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.gloo import gloo_perf
from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.pair_rounds import iperf3_bidir_gbps, plan_rounds
from conftest import SAMPLES


def gloo_line(rank, busbw):
    return "ncclkit-gloo " + json.dumps({"rank": rank, "world": 2, "host": f"node{rank + 1}", "bytes": 4194304,
                                         "iters": 10, "seconds": 0.0056, "algbw_gbps": busbw, "busbw_gbps": busbw,
                                         "correct": True, "torch": "2.13.0+cpu"})


def multi(min_busbw):
    perf = summarize(parse_file(str(SAMPLES / "h200-2host-socket-defaults.txt")), min_busbw_gbps=min_busbw,
                     expected_ranks=2)
    return {"name": "multi", "ran": True, "perf": perf}


def gloo(min_busbw):
    return {"name": "gloo", "ran": True, "perf": gloo_perf([gloo_line(0, 0.4), gloo_line(1, 0.5)], 2, min_busbw)}


@pytest.mark.parametrize("runs, wanted", [
    ([multi(3.0)], True),            # the sample's 2.99 GB/s under a 3 GB/s gate
    ([multi(2.5)], False),
    ([gloo(1.0)], True),
    ([gloo(0.1)], False),
    ([multi(0)], False),             # not gated
    ([{"name": "single", "perf": summarize(parse_file(str(SAMPLES / "h200-1gpu-all_reduce_perf.txt")),
                                           min_busbw_gbps=10000)}], False),   # one node: no pair to blame
])
def test_auto_runs_only_after_a_failed_multi_node_busbw_gate(runs, wanted):
    decision = find_slow_decision(runs, "auto", 4)
    assert decision["run"] is wanted
    if wanted:
        assert decision["why"].startswith("the multi-node gate failed: ") and "GB/s" in decision["why"]


def test_true_and_false_and_one_host():
    assert find_slow_decision([], True, 4) == {"run": True, "why": "asked for (nccl_validate_find_slow: true)"}
    assert find_slow_decision([multi(3.0)], "false", 4)["run"] is False
    assert find_slow_decision([multi(3.0)], "auto", 1) == {"run": False, "why": "one host: no pair to test"}


def test_iperf3_bidir_json_gives_both_directions():
    forward, reverse = iperf3_bidir_gbps((SAMPLES / "iperf3-bidir-loopback.json").read_text())
    assert (round(forward, 3), round(reverse, 3)) == (0.438, 1.619)
    with pytest.raises(ValueError, match="Connection refused"):
        iperf3_bidir_gbps('{"start": {}, "intervals": [], "end": {}, '
                          '"error": "unable to connect to server - server may have stopped running or use a different '
                          'port, firewall issue, etc.: Connection refused"}')
    with pytest.raises(ValueError, match="3.7 or later"):
        iperf3_bidir_gbps('{"end": {"sum_received": {"bits_per_second": 1e9}}}')
    with pytest.raises(ValueError, match="no JSON: iperf3: parameter error"):
        iperf3_bidir_gbps("iperf3: parameter error - some option you are trying to set is not supported")


def found(slow=None):
    hosts = ["node1", "node2", "node3", "node4"]
    pairs = [{"hosts": pair, "round": number, "value": 0.09 if slow in pair else 9.5, "forward_gbps": 9.6,
              "reverse_gbps": 0.09 if slow in pair else 9.5, "error": ""}
             for number, pairs in enumerate(plan_rounds(hosts)) for pair in pairs]
    return dict(pair_blame(pairs), why="asked for (nccl_validate_find_slow: true)", tool="iperf3 --bidir", seconds=2,
                rounds=plan_rounds(hosts))


def report_with(found_slow):
    return nccl_report.build_report({"hosts": {"node1": {"gpus": 0}}, "runs": [], "find_slow": found_slow},
                                    created="2026-12-04T12:00:00Z")


def test_a_named_node_fails_the_report_last_and_shows_in_both_renderings():
    report = report_with(found("node3"))
    assert not report["passed"] and report["verdict"] == "failed"
    assert report["reasons"][-1] == "node3 is slow: its pairs 0.09, 0.09 and 0.09 Gbit/s vs median 9.50 Gbit/s"
    markdown = nccl_report.render_markdown(report)
    assert "## Slow-node search: slow: node3" in markdown
    assert "| 0 | node1 | node4 | 9.5 | 9.6 | 9.5 | ok |" in markdown
    assert markdown.count("| SLOW |") == 3
    html = nccl_report.render_html(report)
    assert '<section id="find-slow"><h2>Slow-node search: slow: node3</h2>' in html
    assert html.count("<td>SLOW</td>") == 3


def test_a_search_that_found_nothing_passes_and_counts_as_a_run():
    report = report_with(found())
    assert report["passed"] and report["verdict"] == "passed" and report["reasons"] == []
    assert "## Slow-node search: no slow node" in nccl_report.render_markdown(report)


def test_bad_find_slow_data_is_refused():
    with pytest.raises(nccl_report.NcclReportError, match="find_slow must be a dict"):
        report_with([])


def test_a_search_that_could_not_run_fails_when_asked_and_is_a_note_on_its_own():
    blocker = "slow-node search not run: no cluster address (ncclkit_cluster_ip) on node2: run nccl_preflight first"
    asked = report_with({"why": "asked for", "reasons": [blocker], "notes": []})
    assert not asked["passed"] and asked["reasons"] == [blocker]
    auto = report_with({"why": "the multi-node gate failed: ...", "reasons": [], "notes": [blocker]})
    assert auto["reasons"] == [] and blocker in auto["notes"] and auto["verdict"] == "skipped"
