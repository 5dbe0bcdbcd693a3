"""report.html: the report dict as one self-contained page (CSS inline, the chart as inline SVG,
the one image a data: URI; a Content-Security-Policy that lets the page load nothing else).

Every value from the report goes through html.escape: it carries host names and log text.
Sections, each only when the report has its data: why it failed (the root cause first, with its
fix), notes, hosts (NIC, NCCL, GPUs, firewall backend, checks), the reachability matrix, link
bandwidth, busbw against message size, each run (gates, findings, rows), autotune, settings.
"""

from __future__ import annotations

import base64
import json
from html import escape

from . import autotune as nccl_report_autotune
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.links.bandwidth import link_rows, recorded, threshold_line
from .chart import busbw_svg, line_colours
from .values import gpudirect_fact, human_size, number
from .verdict import GLOO_RUN, NET_LOOPBACK_RUN, summary_line, timed_out, verdict_text
from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.pair_rounds import find_slow_rows, find_slow_summary, two_decimals as _two

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d2430;margin:0;background:#f6f7f9}
main{max-width:1100px;margin:0 auto;padding:24px}
h1{font-size:24px;margin:0;display:flex;align-items:center;gap:10px}
h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #d8dce3;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}
section{background:#fff;border:1px solid #e1e4ea;border-radius:6px;padding:4px 16px 12px;margin-top:16px}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}
th,td{border:1px solid #d8dce3;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#eef0f4}
td.num{text-align:right;font-variant-numeric:tabular-nums}
code,pre{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{background:#f1f3f6;padding:8px;overflow-x:auto;white-space:pre-wrap;word-break:break-all}
.badge{display:inline-block;border-radius:3px;padding:0 6px;margin:1px 2px;font-size:12px;font-weight:600}
.pass,.ok{background:#d7f0de;color:#14532d}
.fail,.error{background:#fbd5d5;color:#7f1d1d}
.warning{background:#fdecc8;color:#713f12}
.skip,.none{background:#e5e7eb;color:#374151}
.self{background:#f3f4f6;color:#9ca3af}
.verdict-failed{color:#b91c1c}.verdict-passed{color:#15803d}.verdict-skipped{color:#4b5563}
ol.reasons>li{margin:4px 0}
ol.reasons li.root{font-weight:600}
ol.reasons ul{font-weight:400;margin:2px 0}
.fix{color:#14532d}
table.matrix td{text-align:center;min-width:70px}
tr.consequence td{color:#6b7280}
.chart .plot{fill:#fff;stroke:#9ca3af}
.chart .grid{stroke:#e5e7eb}
.chart .tick,.chart .legend{font-size:11px;fill:#374151}
.chart .axis{font-size:12px;fill:#111827}
.chart path.run{fill:none;stroke-width:2}
.chart .key{stroke-width:2}
.chart .gate,.chart .gate-key{stroke-width:1.5;stroke-dasharray:6 4}
details summary{cursor:pointer;color:#1f4e99}
"""

# The page may load nothing: no script, no URL, only its own styles and data: images.
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

_ICONS = {
    "passed": ('<svg xmlns="http://www.w3.org/2000/svg" width="28" height="28" viewBox="0 0 28 28">'
               '<circle cx="14" cy="14" r="13" fill="#15803d"/><path d="M8 14.5l4 4 8-9" fill="none" '
               'stroke="#fff" stroke-width="3"/></svg>'),
    "failed": ('<svg xmlns="http://www.w3.org/2000/svg" width="28" height="28" viewBox="0 0 28 28">'
               '<circle cx="14" cy="14" r="13" fill="#b91c1c"/><path d="M9 9l10 10M19 9L9 19" '
               'stroke="#fff" stroke-width="3"/></svg>'),
    "skipped": ('<svg xmlns="http://www.w3.org/2000/svg" width="28" height="28" viewBox="0 0 28 28">'
                '<circle cx="14" cy="14" r="13" fill="#6b7280"/><path d="M8 14h12" stroke="#fff" '
                'stroke-width="3"/></svg>'),
}


def _e(value):
    return escape(str(value), quote=True)


def _icon_uri(verdict):
    svg = _ICONS.get(verdict, _ICONS["skipped"])
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("ascii")).decode("ascii")


def _badge(passed, yes="pass", no="FAIL", unknown="no verdict"):
    if passed is None:
        return '<span class="badge none">{0}</span>'.format(_e(unknown))
    return '<span class="badge {0}">{1}</span>'.format("pass" if passed else "fail", _e(yes if passed else no))


def render_html(report):
    verdict = str(report.get("verdict") or "skipped")
    title = "ncclkit validation report: {0} ({1} UTC)".format(verdict.upper(), report.get("created"))
    body = ['<header><h1><img class="verdict-icon" src="{0}" width="28" height="28" alt="{1}">'
            '<span class="verdict-{1}">ncclkit validation report: {2}</span></h1>'.format(
                _icon_uri(verdict), _e(verdict), _e(verdict.upper())),
            "<p>Created {0} (UTC). {1}.</p></header>".format(_e(report.get("created")), _e(summary_line(report)))]
    body += _reasons_section(report.get("reasons") or [])
    body += _list_section("Notes", report.get("notes") or [])
    body += _list_section("Adapted to the hosts", ["{0}: {1}".format(host, line) for host, lines
                                                   in sorted((report.get("adaptations") or {}).items())
                                                   for line in lines])
    body += _gates_section(report.get("runs") or [])
    body += _hosts_section(report)
    matrix = reachability_rows(report.get("network") or {})
    body += _matrix_section(matrix, report.get("network") or {})
    body += _links_section(matrix, report.get("link_bandwidth"), recorded(report.get("network")))
    if report.get("find_slow"):
        body += _find_slow_section(report["find_slow"])
    chart = busbw_svg(report)
    if chart:
        body += ['<section id="busbw"><h2>Bus bandwidth against message size</h2>', chart, "</section>"]
    colours = line_colours(report)
    for index, run in enumerate(report.get("runs") or []):
        body += _run_section(run, index, colours.get(run.get("title")))
    if report.get("autotune"):
        body += _autotune_section(report["autotune"])
    if report.get("settings"):
        body += ['<section id="settings"><h2>Settings</h2>', _value_html(report["settings"]), "</section>"]
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        '<meta http-equiv="Content-Security-Policy" content="{0}">'.format(_e(CSP)),
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<link rel="icon" href="{0}">'.format(_icon_uri(verdict)),
        "<title>{0}</title>".format(_e(title)), "<style>{0}</style>".format(CSS), "</head>",
        "<body><main>"] + body + ["</main></body>", "</html>"]) + "\n"


def _reasons_section(reasons):
    """The reasons as report.md has them: each top line (the first is the root cause) with its
    indented lines (fix, findings, stderr) under it."""
    if not reasons:
        return []
    items = []
    for line in reasons:
        if line.startswith("  ") and items:
            items[-1][1].append(line.strip())
        else:
            items.append((line.strip(), []))
    out = ['<section id="reasons"><h2>Why it failed</h2>', '<ol class="reasons">']
    for index, (line, details) in enumerate(items):
        out.append('<li{0}>{1}'.format(' class="root"' if index == 0 else "", _e(line)))
        if details:
            out.append("<ul>" + "".join('<li{0}>{1}</li>'.format(' class="fix"' if detail.startswith("fix:") else "",
                                                                 _e(detail)) for detail in details) + "</ul>")
        out.append("</li>")
    return out + ["</ol>", "</section>"]


def _list_section(heading, lines):
    if not lines:
        return []
    return ["<section><h2>{0}</h2><ul>".format(_e(heading))] + ["<li>{0}</li>".format(_e(line)) for line in lines] \
        + ["</ul></section>"]


# -- hosts ---------------------------------------------------------------------------------


def _hosts_section(report):
    hosts, network, runs = report.get("hosts") or {}, report.get("network") or {}, report.get("runs") or []
    names = sorted(set(hosts) | set(network))
    if not names:
        return []
    out = ['<section id="hosts"><h2>Hosts</h2>', '<table class="hosts">',
           "<tr><th>host</th><th>NIC</th><th>NCCL</th><th>GPUs</th><th>firewall</th><th>nccl-tests</th>"
           "<th>checks</th></tr>"]
    for host in names:
        record, facts = hosts.get(host) or {}, network.get(host) or {}
        out.append('<tr data-host="{0}"><td>{0}</td><td>{1}</td><td>{2}</td><td>{3}</td><td>{4}</td><td>{5}</td>'
                   "<td>{6}</td></tr>".format(
                       _e(host), _e(_host_nic(host, record, network)), _e(_host_nccl(host, record, runs)),
                       _e(_host_gpus(record, host in hosts)), _e(facts.get("firewall") or "-"),
                       _e(_host_tests(record)), _host_checks(host, record, facts, runs, host in hosts)))
    return out + ["</table>", "</section>"]


def _host_nic(host, record, network):
    nic = record.get("cluster_ifname") or ""
    if not nic:  # where the route to a peer went, as nccl_network's probe saw it
        nic = next((row.get("route_dev") for row in reachability_rows(network)
                    if row.get("source") == host and row.get("route_dev")), "")
    address = record.get("cluster_ip") or ""
    return " ".join(part for part in (nic, address) if part) or "-"


def _host_nccl(host, record, runs):
    version = record.get("nccl_version") or (record.get("nccl_tests") or {}).get("nccl_version")
    if not version:  # what the benchmark itself printed on this host
        version = next((run["perf"]["nccl_version"] for run in runs if (run.get("perf") or {}).get("nccl_version")
                        and host in (run.get("hosts") or [run.get("host")])), None)
    return version or "-"


def _host_gpus(record, known):
    if not known or not record:
        return "? (no data)"
    names = ", ".join(sorted(set(record.get("gpu_names") or [])))
    gpus = record.get("gpus") or 0
    return "{0}{1}".format(gpus, " x " + names if names else "") if gpus else \
        "0 ({0})".format(record.get("skip_reason") or "no GPU")


def _host_tests(record):
    if not record:
        return "-"
    tests = record.get("nccl_tests") or {}
    if record.get("bin_dir_given"):
        return "given: " + str(record.get("bin_dir"))
    return tests.get("version") or ("available" if tests.get("available") else "not available")


def _host_checks(host, record, facts, runs, known):
    badges = []
    if known and not record:
        badges.append('<span class="badge fail">no data (failed or unreachable)</span>')
    for run in runs:
        if host in (run.get("hosts") or [run.get("host")]):
            labels = {"single": "single-node", "multi": "multi-node", GLOO_RUN: "Gloo", NET_LOOPBACK_RUN: "NET loopback"}
            label = labels.get(run.get("name"), str(run.get("name")))
            badges.append(_badge(run.get("passed"), label + " pass", label + " FAIL"))
    if facts:
        badges.append(_badge(facts.get("passed"), "network pass", "network FAIL", "network not checked"))
    if record and not record.get("gpus"):
        badges.append('<span class="badge skip">GPU checks skipped</span>')
    return "".join(badges) or "-"


# -- network -------------------------------------------------------------------------------


def reachability_rows(network):
    """The reachability matrix rows of nccl_network (on its report host; older facts carried them on
    every host), each pair once."""
    rows = {}
    for facts in network.values():
        matrix = (facts or {}).get("reachability") if isinstance(facts, dict) else None
        for row in matrix if isinstance(matrix, list) else []:
            if isinstance(row, dict) and row.get("source") and row.get("target"):
                rows.setdefault((row["source"], row["target"]), row)
    return [rows[key] for key in sorted(rows)]


def _matrix_section(rows, network):
    if not rows:
        return []
    hosts = sorted({row["source"] for row in rows} | {row["target"] for row in rows})
    by_pair = {(row["source"], row["target"]): row for row in rows}
    summary = next((facts.get("summary") for _host, facts in sorted(network.items())
                    if isinstance(facts, dict) and facts.get("summary")), "")
    out = ['<section id="reachability"><h2>Reachability (from row to column)</h2>',
           "<p>{0}</p>".format(_e(summary)) if summary else "", '<table class="matrix">',
           "<tr><th>from \\ to</th>" + "".join("<th>{0}</th>".format(_e(host)) for host in hosts) + "</tr>"]
    for source in hosts:
        cells = []
        for target in hosts:
            row = by_pair.get((source, target))
            if source == target:
                cells.append('<td class="self">-</td>')
            elif row is None:
                cells.append('<td class="none" title="not probed">not probed</td>')
            else:
                status = row.get("status") or "ok"
                status = status if status in ("ok", "warning", "error") else "none"
                cells.append('<td class="{0}" data-pair="{1}" title="{2}">{3}</td>'.format(
                    status, _e(source + "->" + target), _e(_pair_details(row)),
                    _e("ok" if status == "ok" else row.get("cause") or status)))
        out.append("<tr><th>{0}</th>{1}</tr>".format(_e(source), "".join(cells)))
    legend = ('<p><span class="badge ok">ok</span><span class="badge warning">warning</span>'
              '<span class="badge error">error</span><span class="badge none">not probed</span>'
              " Hover a cell for the address, route and ports.</p>")
    out += ["</table>", legend]
    return out + _network_verdicts(network) + ["</section>"]


def _network_verdicts(network):
    """nccl_network's verdicts (on its report host; older facts on every host), each once, with its fix."""
    seen, items = set(), []
    for _host, facts in sorted(network.items()):
        for verdict in (facts or {}).get("verdicts") or [] if isinstance(facts, dict) else []:
            text = verdict_text(verdict)
            if text in seen:
                continue
            seen.add(text)
            severity = verdict.get("severity") if isinstance(verdict, dict) else None
            fix = verdict.get("fix") if isinstance(verdict, dict) else None
            items.append('<li><span class="badge {0}">{1}</span> {2}{3}</li>'.format(
                severity if severity in ("error", "warning") else "none", _e(severity or "note"), _e(text),
                ' <span class="fix">fix: {0}</span>'.format(_e(fix)) if fix and fix not in text else ""))
    return ["<h3>Network verdicts</h3>", "<ul>"] + items + ["</ul>"] if items else []


def _pair_details(row):
    parts = ["address {0}".format(row.get("address")), "via {0}".format(row.get("route_dev") or "?"),
             "ping {0}".format(number(row.get("ping")))]
    if row.get("large_size"):
        parts.append("ping {0} B {1}".format(row.get("large_size"), number(row.get("ping_large"))))
    if row.get("ports_failed"):
        parts.append("ports " + ", ".join("{0} {1}".format(port, state)
                                          for port, state in sorted(row["ports_failed"].items())))
    if row.get("bandwidth_gbps") is not None:
        parts.append("{0} Gbit/s".format(number(row["bandwidth_gbps"])))
    return "; ".join(parts)


def _links_section(rows, link_bandwidth, record=None):
    """iperf3 bandwidth per link: nccl_network's link_bandwidth record (both directions, the gate)
    when there is one, else the matrix rows that measured one; and a link_bandwidth list when the
    report carries one."""
    measured = [row for row in rows if row.get("bandwidth_gbps") is not None]
    if not measured and not link_bandwidth and not record:
        return []
    out = ['<section id="links"><h2>Link bandwidth</h2>']
    if record:
        out += ["<p>{0}</p>".format(_e(threshold_line(record))),
                '<table class="links"><tr><th>from</th><th>to</th><th>round</th><th>sent (Gbit/s)</th>'
                "<th>back (Gbit/s)</th><th>status</th></tr>"]
        out += ['<tr><td>{0}</td><td>{1}</td><td class="num">{2}</td><td class="num">{3}</td>'
                '<td class="num">{4}</td><td class="{5}">{6}</td></tr>'.format(
                    _e(row.get("source")), _e(row.get("target")), _e(row.get("round")), _e(number(row.get("sent_gbps"))),
                    _e(number(row.get("received_gbps"))), "error" if row["status"] == "slow" else "ok",
                    _e(row["status"])) for row in link_rows(record)]
        out.append("</table>")
    elif measured:
        out += ['<table class="links"><tr><th>from</th><th>to</th><th>bandwidth (Gbit/s)</th><th>status</th></tr>']
        out += ['<tr><td>{0}</td><td>{1}</td><td class="num">{2}</td><td>{3}</td></tr>'.format(
            _e(row["source"]), _e(row["target"]), _e(number(row["bandwidth_gbps"])),
            _e(row.get("status") or "ok")) for row in measured]
        out.append("</table>")
    if link_bandwidth:
        out.append(_value_html(link_bandwidth))
    return out + ["</section>"]


def _find_slow_section(found):
    """The slow-node search: who is blamed, the threshold and every pair (Gbit/s)."""
    out = ['<section id="find-slow"><h2>Slow-node search: {0}</h2>'.format(_e(find_slow_summary(found)))]
    out += ["<p>{0}</p>".format(_e(line)) for line in [found.get("why")] + list(found.get("reasons") or []) if line]
    if found.get("pairs"):
        out.append("<p>{0}; a pair is slow below {1} {2} ({3} x the median {4} of each node's best pair).</p>".format(
            _e(found.get("tool") or "?"), _e(_two(found.get("threshold"))), _e(found.get("unit") or ""),
            _e(number(found.get("fraction"))), _e(_two(found.get("reference")))))
        out.append('<table class="links"><tr><th>round</th><th>server</th><th>client</th><th>slower direction</th>'
                   "<th>client to server</th><th>server to client</th><th>verdict</th></tr>")
        out += ['<tr><td class="num">{0}</td><td>{1}</td><td>{2}</td><td class="num">{3}</td><td class="num">{4}</td>'
                '<td class="num">{5}</td><td>{6}</td></tr>'.format(*(_e(number(value)) if index in (0, 3, 4, 5)
                                                                     else _e(value) for index, value in enumerate(row)))
                for row in find_slow_rows(found)]
        out.append("</table>")
    return out + ["</section>"]


# -- runs ----------------------------------------------------------------------------------


def _gates_section(runs):
    """Each run's self-calibrated gates: what was measured, the threshold and where it came from."""
    rows = [(run, row) for run in runs for row in run.get("gate_rows") or []]
    if not rows:
        return []
    out = ['<section id="gates"><h2>Gates</h2>', "<table><tr><th>run</th><th>gate</th><th>measured</th>"
           "<th>threshold</th><th>threshold from</th><th>result</th></tr>"]
    out += ['<tr><td>{0}</td><td>{1}</td><td class="num">{2}</td><td class="num">{3}</td><td>{4}</td>'
            "<td>{5}</td></tr>".format(_e(run.get("title")), _e(row.get("name")), _e(number(row.get("measured"))),
                                       _e(number(row.get("threshold"))), _e(row.get("source")), _gate_badge(row))
            for run, row in rows]
    return out + ["</table>", "</section>"]


def _gate_badge(row):
    state = row.get("state")
    return _badge({"passed": True, "failed": False}.get(state), unknown=str(state or "no verdict"))


def _run_section(run, index, colour):
    """A run: its colour in the chart (when drawn there), command, facts, gates, findings, rows."""
    swatch = '<span style="color:{0}" title="its line in the chart">&#9632;</span> '.format(colour) if colour else ""
    out = ['<section class="run" id="run-{0}"><h2>{1}{2} {3}</h2>'.format(
        index, swatch, _e(run.get("title")), _badge(run.get("passed"), "PASSED", "FAILED"))]
    if run.get("command"):
        out.append("<p>Command: <code>{0}</code></p>".format(_e(" ".join(str(arg) for arg in run["command"]))))
    out.append("<p>{0}</p>".format(_e("; ".join(_run_facts(run)))))
    perf = run.get("perf") or {}
    if perf.get("gates"):
        out += ["<h3>Gates</h3>", "<table><tr><th>gate</th><th>limit</th><th>measured</th><th>verdict</th></tr>"]
        out += ['<tr><td>{0}</td><td class="num">{1}</td><td class="num">{2}</td><td>{3} {4}</td></tr>'.format(
            _e(gate.get("name")), _e(number(gate.get("limit"))), _e(number(gate.get("measured"))),
            _badge(gate.get("passed")), _e(gate.get("message") or "")) for gate in perf["gates"]]
        out.append("</table>")
    findings = [finding for finding in (run.get("diagnosis") or {}).get("findings") or [] if isinstance(finding, dict)]
    if findings:
        out += ["<h3>Findings (the root cause first)</h3>",
                "<table><tr><th>code</th><th>severity</th><th>host</th><th>cause</th><th>fix</th></tr>"]
        out += ['<tr{0}><td><code>{1}</code></td><td><span class="badge {2}">{3}</span></td><td>{4}</td><td>{5}</td>'
                '<td class="fix">{6}</td></tr>'.format(
                    ' class="consequence"' if finding.get("consequence_of") else "", _e(finding.get("code")),
                    _e(finding.get("severity") if finding.get("severity") in ("error", "warning") else "none"),
                    _e(finding.get("severity")), _e(finding.get("host") or "-"), _e(finding.get("cause") or ""),
                    _e(finding.get("fix") or "")) for finding in findings]
        out.append("</table>")
    if run.get("stderr_tail") and not run.get("passed"):
        out += ["<h3>Last lines of stderr</h3>", "<pre>{0}</pre>".format(_e("\n".join(run["stderr_tail"][-10:])))]
    rows = perf.get("rows") or []
    if rows:
        out += ["<details><summary>{0} measured sizes</summary>".format(len(rows)),
                "<table><tr><th>size</th><th>time (us)</th><th>algbw (GB/s)</th><th>busbw (GB/s)</th>"
                "<th>in-place busbw</th><th>#wrong</th></tr>"]
        for row in rows:
            result, in_place = row.get("out_of_place") or {}, row.get("in_place") or {}
            out.append("<tr>" + "".join('<td class="num">{0}</td>'.format(_e(value)) for value in (
                human_size(row.get("size_bytes")), number(result.get("time_us")), number(result.get("algbw_gbps")),
                number(result.get("busbw_gbps")), number(in_place.get("busbw_gbps")), number(result.get("wrong"))))
                + "</tr>")
        out.append("</table></details>")
        if isinstance(perf.get("row_count"), int) and perf["row_count"] > len(rows):
            out.append("<p>The first {0} of {1} rows; the gates above read them all.</p>".format(
                len(rows), perf["row_count"]))
    if run.get("raw"):
        out.append("<p>Raw files: {0}</p>".format(", ".join(
            '<a href="{0}">{0}</a>'.format(_e(path)) for path in run["raw"])))
    return out + ["</section>"]


def _run_facts(run):
    facts = ["rc {0}".format(run.get("rc"))]
    if not run.get("ran", True):
        facts = ["not run: {0}".format(run.get("not_run_reason") or "unknown reason")]
    if isinstance(run.get("duration_s"), (int, float)):
        facts.append("{0:.1f} s".format(run["duration_s"]))
    if timed_out(run):
        facts.append("stopped after the {0} s timeout".format(run.get("timeout_s")))
    perf = run.get("perf") or {}
    if perf:
        facts.append("ranks {0} on {1}".format(perf.get("ranks"), ", ".join(perf.get("hosts") or []) or "?"))
        if perf.get("backend") == GLOO_RUN:
            facts.append("torch {0}".format(perf.get("torch_version") or "?"))
        else:
            facts += ["NCCL {0}".format(perf.get("nccl_version") or "?"),
                      "nccl-tests {0}".format(perf.get("nccl_tests_version") or "?")]
        if perf.get("peak_busbw_gbps") is not None:
            facts.append("peak busbw {0} GB/s at {1}".format(number(perf["peak_busbw_gbps"]), human_size(
                perf.get("peak_busbw_size_bytes") if "peak_busbw_size_bytes" in perf else perf.get("bytes"))))
    gpudirect = gpudirect_fact(run)
    if gpudirect:
        facts.append(gpudirect)
    return facts


# -- autotune ------------------------------------------------------------------------------


def _autotune_section(autotune):
    """nccl_validate's autotune as its summary sentence and the candidates' table
    (report.autotune), the rest as data; data of another shape as data alone."""
    line = nccl_report_autotune.summary(autotune)
    if not line:
        return ['<section id="autotune"><h2>Autotune</h2>', _value_html(autotune), "</section>"]
    table = nccl_report_autotune.rows(autotune)
    html = ['<section id="autotune"><h2>Autotune</h2>', "<p>{0}</p>".format(_e(line))]
    if table:
        html.append("<table><tr>" + "".join("<th>{0}</th>".format(_e(c)) for c in nccl_report_autotune.COLUMNS)
                    + "</tr>" + "".join("<tr>" + "".join("<td>{0}</td>".format(_e(cell)) for cell in row) + "</tr>"
                                        for row in table) + "</table>")
    rest = {key: value for key, value in autotune.items() if key != "candidates"}
    return html + [_value_html(rest), "</section>"]


# -- any other data ------------------------------------------------------------------------


def _value_html(value):
    """A table for data whose shape this page does not fix (settings, autotune, link lists):
    a dict as key/value rows, a list of dicts as one row each, anything else as JSON text."""
    if isinstance(value, dict):
        return "<table>" + "".join("<tr><th>{0}</th><td>{1}</td></tr>".format(_e(key), _value_html(item))
                                   for key, item in sorted(value.items(), key=lambda pair: str(pair[0]))) + "</table>"
    if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        columns = []
        for item in value:
            columns += [key for key in item if key not in columns]
        return ("<table><tr>" + "".join("<th>{0}</th>".format(_e(column)) for column in columns) + "</tr>"
                + "".join("<tr>" + "".join("<td>{0}</td>".format(_value_html(item.get(column))) for column in columns)
                          + "</tr>" for item in value) + "</table>")
    if isinstance(value, (dict, list)):
        return "<code>{0}</code>".format(_e(json.dumps(value, sort_keys=True)))
    return _e(number(value))
