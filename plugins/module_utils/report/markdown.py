"""report.md: the report dict (report.verdict.build_report) as Markdown, the reasons first."""

from __future__ import annotations

import json

from . import autotune as nccl_report_autotune
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.links.bandwidth import link_rows, recorded, threshold_line
from .values import gpudirect_fact, human_size, number
from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.pair_rounds import find_slow_rows, find_slow_summary, two_decimals as _two
from .verdict import GLOO_RUN, NCCL_NOT_EXERCISED, summary_line, timed_out, verdict_text


def render_markdown(report):
    lines = ["# ncclkit validation report: {0}".format(report["verdict"].upper()), "",
             "Created {0} (UTC). {1}.".format(report["created"], summary_line(report)), ""]
    if report["reasons"]:
        lines += ["## Why it failed", ""]
        lines += [("  - " if line.startswith("  ") else "- ") + _md(line.strip()) for line in report["reasons"]]
        lines += [""]
    if report["notes"]:
        lines += ["## Notes", ""] + ["- " + _md(note) for note in report["notes"]] + [""]
    if report.get("adaptations"):
        lines += ["## Adapted to the hosts", ""] + ["- {0}: {1}".format(_md(host), _md(line))
                                                    for host, host_lines in report["adaptations"].items()
                                                    for line in host_lines] + [""]
    lines += _gates_section(report["runs"])
    lines += _hosts_section(report["hosts"])
    for run in report["runs"]:
        lines += _run_section(run)
    if report["network"]:
        lines += _network_section(report["network"])
        lines += _links_section(recorded(report["network"]))
    if report.get("autotune"):
        lines += _autotune_section(report["autotune"])
    if report.get("find_slow"):
        lines += _find_slow_section(report["find_slow"])
    if report["settings"]:
        lines += ["## Settings", "", "```json", json.dumps(report["settings"], indent=2, sort_keys=True), "```", ""]
    return "\n".join(lines).rstrip() + "\n"


def _autotune_section(autotune):
    line = nccl_report_autotune.summary(autotune)
    lines = ["## Autotune", ""] + ([_md(line), ""] if line else [])
    table = nccl_report_autotune.rows(autotune)
    if table:
        lines += ["| " + " | ".join(nccl_report_autotune.COLUMNS) + " |",
                  "|" + "---|" * len(nccl_report_autotune.COLUMNS)]
        lines += ["| " + " | ".join(_md(cell) for cell in row) + " |" for row in table] + [""]
    return lines


def _gates_section(runs):
    """Each run's self-calibrated gates: what was measured, the threshold and where it came from."""
    rows = [(run, row) for run in runs for row in run.get("gate_rows") or []]
    if not rows:
        return []
    lines = ["## Gates", "", "| run | gate | measured | threshold | threshold from | result |", "|---|---|---|---|---|---|"]
    lines += ["| {0} | {1} | {2} | {3} | {4} | {5} |".format(
        _md(run["title"]), _md(row["name"]), _md(number(row["measured"])), _md(number(row["threshold"])),
        _md(row["source"]), _md(row["state"])) for run, row in rows]
    return lines + [""]


def _hosts_section(hosts):
    lines = ["## Hosts", "", "| host | GPUs | nccl-tests | GPU checks |", "|---|---|---|---|"]
    for host, record in sorted(hosts.items()):
        if not record:
            lines.append("| {0} | ? | ? | no data (failed or unreachable) |".format(_md(host)))
            continue
        tests = record.get("nccl_tests") or {}
        if record.get("bin_dir_given"):
            version = "given: " + str(record.get("bin_dir"))
        else:
            version = tests.get("version") or ("available" if tests.get("available") else "not available")
        gpus = record.get("gpus") or 0
        names = ", ".join(sorted(set(record.get("gpu_names") or [])))
        check = "run" if gpus else "skipped: " + (record.get("skip_reason") or "no GPU")
        lines.append("| {0} | {1}{2} | {3} | {4} |".format(
            _md(host), gpus, " ({0})".format(_md(names)) if names else "", _md(str(version)), _md(check)))
    return lines + [""]


def _run_section(run):
    lines = ["## {0}: {1}".format(run["title"], "PASSED" if run["passed"] else "FAILED"), ""]
    if run.get("command"):
        lines += ["Command: `{0}`".format(" ".join(str(arg) for arg in run["command"])), ""]
    facts = ["rc {0}".format(run.get("rc"))]
    if run.get("duration_s") is not None:
        facts.append("{0:.1f} s".format(run["duration_s"]))
    if timed_out(run):
        facts.append("stopped after the {0} s timeout".format(run.get("timeout_s")))
    perf = run.get("perf")
    if perf and perf.get("backend") == GLOO_RUN:
        facts += ["ranks {0} on {1}".format(perf.get("ranks"), ", ".join(perf.get("hosts") or []) or "?"),
                  "torch {0}".format(perf.get("torch_version") or "?"), NCCL_NOT_EXERCISED]
        if perf.get("peak_busbw_gbps") is not None:
            facts.append("busbw {0} GB/s at {1} (slowest rank; {2} s per all-reduce)".format(
                number(perf["peak_busbw_gbps"]), human_size(perf.get("bytes")), number(perf.get("seconds"))))
    elif perf:
        facts += ["ranks {0} on {1}".format(perf.get("ranks"), ", ".join(perf.get("hosts") or []) or "?"),
                  "NCCL {0}".format(perf.get("nccl_version") or "?"),
                  "nccl-tests {0}".format(perf.get("nccl_tests_version") or "?")]
        if perf.get("ranks") == 1:
            facts.append("busbw is 0 by definition with one rank")
        elif perf.get("peak_busbw_gbps") is not None:
            facts.append("peak busbw {0} GB/s at {1}".format(
                number(perf["peak_busbw_gbps"]), human_size(perf.get("peak_busbw_size_bytes"))))
    gpudirect = gpudirect_fact(run)
    if gpudirect:
        facts.append(gpudirect)
    lines += ["- " + "; ".join(facts)]
    lines += ["- " + _md(line.strip()) for line in run["reasons"][1:] if line.startswith("  ")]
    lines.append("")
    if perf and perf.get("gates"):
        lines += ["| gate | limit | measured | verdict |", "|---|---|---|---|"]
        lines += ["| {0} | {1} | {2} | {3} |".format(
            gate["name"], number(gate.get("limit")), number(gate.get("measured")),
            "pass" if gate.get("passed") else "FAIL: " + _md(gate["message"])) for gate in perf["gates"]]
        lines.append("")
    rows = (perf or {}).get("rows") or []
    if rows:
        lines += ["| size | time (us) | algbw (GB/s) | busbw (GB/s) | in-place busbw | #wrong |",
                  "|---:|---:|---:|---:|---:|---:|"]
        for row in rows:
            out, inp = row.get("out_of_place") or {}, row.get("in_place") or {}
            lines.append("| {0} | {1} | {2} | {3} | {4} | {5} |".format(
                human_size(row.get("size_bytes")), number(out.get("time_us")), number(out.get("algbw_gbps")),
                number(out.get("busbw_gbps")), number(inp.get("busbw_gbps")), number(out.get("wrong"))))
        lines.append("")
        if isinstance(perf.get("row_count"), int) and perf["row_count"] > len(rows):
            lines += ["The first {0} of {1} rows; the gates above read them all.".format(len(rows), perf["row_count"]),
                      ""]
    if run.get("raw"):
        lines += ["Raw files: " + ", ".join("[{0}]({0})".format(path) for path in run["raw"]), ""]
    return lines


def _network_section(network):
    lines, seen = ["## Network (nccl_network)", ""], set()
    for host, facts in sorted(network.items()):
        state = {True: "passed", False: "FAILED"}.get(facts.get("passed"), "no verdict")
        details = ["{0} {1}".format(label, facts[key]) for key, label in (
            ("port_range", "ports"), ("master_port", "master port"), ("firewall", "firewall"))
            if facts.get(key) not in (None, "", [])]
        lines.append("- {0}: {1}".format(_md(host), "; ".join([state] + details)))
        texts = [verdict_text(verdict) for verdict in facts.get("verdicts") or []]
        lines += ["  - " + _md(text) for text in texts if text not in seen]
        seen.update(texts)
    return lines + [""]


def _links_section(record):
    """nccl_network's iperf3 links, both directions, slow ones first, under the gate's threshold."""
    if not record:
        return []
    lines = ["## Link bandwidth (nccl_network, iperf3)", "", _md(threshold_line(record)) + ".", "",
             "| from | to | round | sent (Gbit/s) | back (Gbit/s) | status |", "|---|---|---|---|---|---|"]
    lines += ["| {0} | {1} | {2} | {3} | {4} | {5} |".format(
        _md(row.get("source")), _md(row.get("target")), row.get("round"), number(row.get("sent_gbps")),
        number(row.get("received_gbps")), "**slow**" if row["status"] == "slow" else "ok") for row in link_rows(record)]
    return lines + [""]


def _find_slow_section(found):
    lines = ["## Slow-node search: {0}".format(_md(find_slow_summary(found))), ""]
    lines += ["- " + _md(line) for line in [found.get("why")] + list(found.get("reasons") or []) if line]
    if found.get("pairs"):
        lines += ["- {0}, {1} s per pair; a pair is slow below {2} {3} ({4} x the median {5} {3} of each node's best "
                  "pair{6})".format(_md(found.get("tool") or "?"), found.get("seconds", "?"), _two(found.get("threshold")),
                                    found.get("unit") or "", number(found.get("fraction")), _two(found.get("reference")),
                                    ", floor {0}".format(number(found["floor"])) if found.get("floor") else ""), ""]
        lines += ["| round | server | client | slower direction | client to server | server to client | verdict |",
                  "|---:|---|---|---:|---:|---:|---|"]
        lines += ["| {0} | {1} | {2} | {3} | {4} | {5} | {6} |".format(
            number(row[0]), _md(row[1]), _md(row[2]), number(row[3]), number(row[4]), number(row[5]), _md(row[6]))
            for row in find_slow_rows(found)]
    return lines + [""]


def _md(text):
    return str(text).replace("|", "\\|").replace("\n", " ")
