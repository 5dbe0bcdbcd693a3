"""report.html without a browser: every value escaped, nothing loaded from outside, the sections
present exactly when the report has their data, the chart's lines, gates and scales."""

import re
from html.parser import HTMLParser

from ansible_collections.ncclkit.cluster.plugins.module_utils import report as nccl_report
from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests.output import parse_file, summarize
from ansible_collections.ncclkit.cluster.plugins.module_utils.report.chart import busbw_svg
from conftest import SAMPLES

HOST = {"gpus": 1, "gpu_names": ["NVIDIA H200"], "skip_reason": "", "nccl_tests": {"version": "2.19.6"},
        "cluster_ifname": "eth1", "cluster_ip": "10.0.0.11", "nccl_version": "2.27.7"}
HOSTILE = '<img src="http://198.51.100.1/x.png" onerror="alert(1)">'


def perf(name, **gates):
    return summarize(parse_file(str(SAMPLES / name)), **gates)


def run(name="multi", host="node1", **fields):
    record = {"name": name, "host": host, "hosts": ["node1", "node2"] if name == "multi" else [host],
              "command": ["all_reduce_perf", "-g", "1"], "ran": True, "rc": 0, "timeout_s": 300, "duration_s": 12.5,
              "expected_ranks": 2, "perf": None, "perf_error": None, "diagnosis": None, "stderr_tail": [], "raw": []}
    record.update(fields)
    return record


def matrix_row(source, target, status="ok", cause=None, bandwidth=None):
    return {"source": source, "target": target, "address": "10.0.0.2", "route_dev": "eth1", "ping": True,
            "ping_large": True, "large_size": 1472, "ports_ok": [29500], "ports_failed": {},
            "bandwidth_gbps": bandwidth,
            "status": status, "cause": cause}


def report_of(*runs, hosts=None, **data):
    return nccl_report.build_report(dict(hosts=hosts or {"node1": HOST, "node2": HOST}, runs=list(runs), **data),
                                    created="2026-12-02T09:05:00Z")


class Tags(HTMLParser):
    """Every start tag with its attributes, as a browser's parser sees them."""

    def __init__(self, text):
        super().__init__()
        self.tags = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_every_value_is_escaped_and_nothing_is_loaded_from_outside():
    hostile = dict(HOST, gpu_names=[HOSTILE], cluster_ifname=HOSTILE)
    network = {HOSTILE: {"passed": False, "firewall": HOSTILE, "verdicts": [{"message": HOSTILE, "severity": "error"}],
                         "reachability": [matrix_row(HOSTILE, "node2", "error", HOSTILE)]}}
    report = report_of(run(name="single", host=HOSTILE, rc=1, stderr_tail=[HOSTILE],
                           perf=perf("h200-1gpu-all_reduce_perf.txt")),
                       hosts={HOSTILE: hostile}, network=network, notes=[HOSTILE], settings={HOSTILE: HOSTILE})
    page = nccl_report.render_html(report)
    tags = Tags(page).tags
    # The only image is the verdict icon, a data: URI; no attribute names an outside URL or a handler.
    assert [attrs["src"][:26] for tag, attrs in tags if tag == "img"] == ["data:image/svg+xml;base64,"]
    assert not [tag for tag, attrs in tags if tag in ("script", "iframe", "object", "embed")]
    assert not [name for _tag, attrs in tags for name in attrs if name.startswith("on")]
    assert not re.search(r'(src|href)="(https?:)?//', page)
    assert "&lt;img src=&quot;http://198.51.100.1/x.png&quot; onerror=&quot;alert(1)&quot;&gt;" in page
    csp = next(attrs["content"] for tag, attrs in tags if tag == "meta" and attrs.get("http-equiv"))
    assert csp == "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def test_hosts_table_names_nic_nccl_gpus_firewall_and_checks():
    network = {"node1": {"passed": True, "firewall": "nftables", "verdicts": [], "reachability": []},
               "node2": {"passed": False, "firewall": "ufw", "verdicts": [], "reachability": []}}
    report = report_of(run(perf=perf("h200-2host-socket-defaults.txt", expected_ranks=2)),
                       hosts={"node1": HOST, "node2": dict(HOST, cluster_ifname="", nccl_version="")},
                       network=network)
    page = nccl_report.render_html(report)
    row1 = re.search(r'<tr data-host="node1">(.*?)</tr>', page).group(1)
    assert re.findall(r"<td>([^<]*)</td>", row1)[:5] == ["node1", "eth1 10.0.0.11", "2.27.7", "1 x NVIDIA H200",
                                                         "nftables"]
    assert "multi-node pass" in row1 and "network pass" in row1
    row2 = re.search(r'<tr data-host="node2">(.*?)</tr>', page).group(1)
    # No NIC name and no NCCL in the host's record: its address, and the version the benchmark printed there.
    assert "<td>node2</td><td>10.0.0.11</td><td>2.28.9</td>" in row2 and "network FAIL" in row2


def test_the_matrix_is_a_coloured_grid_each_pair_once_with_the_link_bandwidth():
    rows = [matrix_row("node1", "node2", bandwidth=9.41), matrix_row("node2", "node1", "error", "port_blocked"),
            matrix_row("node1", "node3", "warning", "mtu")]
    network = {host: {"passed": False, "reachability": rows, "verdicts": [
        {"message": "node2 -> node1: port 29500 dropped", "severity": "error", "fix": "admit TCP 29500"}]}
        for host in ("node1", "node2", "node3")}
    page = nccl_report.render_html(report_of(network=network))
    cells = re.findall(r'<td class="(\w+)" data-pair="([^"]+)"', page)
    assert cells == [("ok", "node1-&gt;node2"), ("warning", "node1-&gt;node3"), ("error", "node2-&gt;node1")]
    assert page.count('class="none" title="not probed"') == 3  # node2->node3, node3->node1, node3->node2
    assert page.count('<td class="self">') == 3
    assert page.count("node2 -&gt; node1: port 29500 dropped") == 2  # the reasons and the verdicts, once each
    assert '<td class="num">9.41</td>' in re.search(r'<section id="links">.*?</section>', page, re.S).group(0)


def test_optional_sections_only_when_their_data_exists():
    bare = nccl_report.render_html(report_of())
    for section in ('id="reasons"', 'id="reachability"', 'id="links"', 'id="busbw"', 'id="autotune"'):
        assert section not in bare
    # A shape of the data a play may add; the page shows whatever it holds.
    autotune = {"winner": {"NCCL_NSOCKS_PERTHREAD": "4"}, "ratio": 1.31,
                "candidates": [{"env": "defaults", "median_gbps": 2.9}, {"env": "4x2", "median_gbps": 3.8}]}
    report = report_of(run(perf=perf("h200-2host-socket-defaults.txt")), autotune=autotune,
                       link_bandwidth=[{"source": "node1", "target": "node2", "gbps": 9.4}])
    assert report["autotune"] == autotune and "link_bandwidth" not in report_of()
    page = nccl_report.render_html(report)
    autotune = re.search(r'<section id="autotune">.*?</section>', page, re.S).group(0)
    assert "<th>median_gbps</th>" in autotune and "<td>3.8</td>" in autotune and "NCCL_NSOCKS_PERTHREAD" in autotune
    assert "<th>gbps</th>" in re.search(r'<section id="links">.*?</section>', page, re.S).group(0)


def test_the_chart_has_a_path_per_measured_run_and_a_dashed_gate():
    report = report_of(run(perf=perf("h200-2host-socket-defaults.txt", expected_ranks=2, min_busbw_gbps=2.5)),
                       run(name="single", perf=perf("h200-1gpu-all_reduce_perf.txt")), run(name="single", host="node2"))
    svg = busbw_svg(report)
    paths = re.findall(r'<path class="run" d="([^"]+)" stroke="[^"]+" data-run="([^"]+)"', svg)
    assert [label for _d, label in paths] == ["single-node on node1", "multi-node across node1, node2"]
    multi_points = [tuple(map(float, point.split(","))) for point in re.findall(r"[\d.]+,[\d.]+", paths[1][0])]
    assert len(multi_points) == 4 and [x for x, _y in multi_points] == sorted(x for x, _y in multi_points)
    # Log scale: 1 MiB -> 8 MiB -> 64 MiB -> 512 MiB are equal steps on the x axis.
    steps = [round(b[0] - a[0], 1) for a, b in zip(multi_points, multi_points[1:], strict=False)]
    assert len(set(steps)) == 1
    gate, = re.findall(r'<line class="gate" x1="[\d.]+" x2="[\d.]+" y1="([\d.]+)"', svg)
    # 2.5 GB/s lies between the multi-node line's lowest (2.22) and highest (3.29) points (SVG y grows down).
    ys = [y for _x, y in multi_points]
    assert min(ys) < float(gate) < max(ys)
    assert "gate: multi-node across node1, node2 needs &gt;= 2.5 GB/s" in svg
    assert "single-node on node1 (1 rank: busbw is 0 by definition)" in svg
    assert busbw_svg(report_of(run(name="single", host="node2"))) == ""


def test_write_report_puts_the_page_beside_report_md(tmp_path):
    final = nccl_report.write_report(str(tmp_path), "20261202T090419Z", report_of(run(perf=perf(
        "h200-2host-socket-defaults.txt"))))
    page = (tmp_path / "20261202T090419Z" / "report.html").read_text()
    assert final.endswith("20261202T090419Z") and page.startswith("<!DOCTYPE html>")
    assert "<title>ncclkit validation report: PASSED (2026-12-02T09:05:00Z UTC)</title>" in page
