"""The nccl_validate report: verdicts from the benchmark runs, report.md and report.json, written
so that a reader never sees a half-written report, and read back (for the bandwidth plot).

Pure Python 3.8+ standard library: the nccl_report module and the ncclkit package share it.

A report folder is <parent>/<name>/ with report.json, report.md and raw/<host>/<files>, all for the
owner only (0700/0600). It is built in a staging folder of its own, <parent>/.<name>.<random>.partial/,
and renamed into place in one step once complete.

A run record (one per benchmark launch, made by the role) holds: name ("single" or "multi"),
host (where it was launched), hosts (the hosts it spans), command (argv), ran (false when it could
not be started, with not_run_reason), rc, timeout_s, duration_s, expected_ranks,
min_busbw_gbps, perf (the nccl_perf facts, or None), perf_error (why the output could not be
read), diagnosis (nccl_diagnose's findings and hosts, or None), stderr_tail and raw (paths).
"""

from __future__ import annotations

import datetime
import errno
import json
import os
import re
import shutil
import tempfile
import time

from .nccl_tests_json import allowed_env_entries

REPORT_VERSION = 1
REPORT_JSON = "report.json"
REPORT_MD = "report.md"
RAW_DIR = "raw"
PLOT_PNG = "busbw.png"
PARTIAL_SUFFIX = ".partial"
# A staging folder untouched this long was left by an interrupted play (no play waits a day).
STALE_STAGING_S = 24 * 3600
# Staging folders nccl_validate makes: .<UTC timestamp>.<8 random>.partial, and earlier versions'
# .<UTC timestamp>[-N].partial (others are not ours to remove).
_STAGING_NAME = re.compile(r"^\.\d{8}T\d{6}Z(-\d+)?(\.[a-z0-9_]{8})?\.partial$")

# Exit codes of coreutils timeout: the command ran too long (TERM), or still ran after the grace (KILL).
TIMEOUT_RC = 124
KILLED_RC = 137


class NcclReportError(ValueError):
    """A report cannot be built, written or read; the message names the cause and the fix."""


# -- verdicts ------------------------------------------------------------------------------


# nccl_diagnose's findings for a run that fell back from IB/eRDMA/EFA to sockets (or another provider).
TRANSPORT_FALLBACK_CODES = ("socket_instead_of_ib", "socket_instead_of_efa")


# The run nccl_validate makes on hosts without GPU: it proves the launcher, rendezvous and Gloo path.
GLOO_RUN = "gloo"
NCCL_NOT_EXERCISED = "Gloo/CPU: NCCL not exercised"


def run_title(run):
    if run.get("name") == GLOO_RUN:
        return "Gloo all-reduce across " + ", ".join(run.get("hosts") or [run.get("host") or "?"])
    if run.get("name") == "multi":
        return "multi-node across " + ", ".join(run.get("hosts") or [run.get("host") or "?"])
    return "single-node on " + str(run.get("host"))


def run_verdict(run):
    """(passed, reasons): reasons are lines a person can act on, the cause first."""
    title = run_title(run)
    if not run.get("ran", True):
        return False, ["{0}: not run: {1}".format(title, run.get("not_run_reason") or "unknown reason")]
    reasons = []
    perf = run.get("perf")
    program = "the Gloo all-reduce" if run.get("name") == GLOO_RUN else "all_reduce_perf"
    root = root_cause(run.get("diagnosis"))
    if timed_out(run):
        reasons.append("{0}: {program} did not finish within {1} s and was stopped: {2}".format(
            title, run.get("timeout_s"), root["cause"] if root else "it hung (across nodes usually NCCL or Gloo on "
            "the wrong NIC, or blocked ports; see the findings)", program=program))
    elif root:
        reasons.append("{0}: {1}".format(title, root["cause"]))
    elif run.get("rc") == KILLED_RC:
        after = " after {0:.1f} s".format(run["duration_s"]) if isinstance(run.get("duration_s"), (int, float)) else ""
        reasons.append("{0}: {program} was killed by signal 9{1}, before the {2} s timeout: out of memory? "
                       "(see dmesg on the host; lower nccl_validate_max_bytes)".format(title, after, run.get("timeout_s"),
                                                                                       program=program))
    elif perf is None:
        reasons.append("{0}: no {1} result (rc {2}): {3}".format(
            title, "Gloo" if run.get("name") == GLOO_RUN else "nccl-tests", run.get("rc"),
            run.get("perf_error") or "the output could not be read"))
        reasons.extend("  stderr: " + line for line in (run.get("stderr_tail") or [])[-5:])
    if perf is not None and not perf.get("passed"):
        failed = [gate["message"] for gate in perf.get("gates", []) if not gate.get("passed")]
        gates_line = "{0}: {1}".format(title, "; ".join(failed))
        if run.get("name") != GLOO_RUN and any(gate.get("name") == "expected_ranks" and not gate.get("passed")
                                               for gate in perf.get("gates", [])):
            gates_line += (" (every rank must join one run: an nccl-tests built without MPI=1 runs each rank "
                           "alone; a launcher that starts fewer ranks than GPUs shows the same)")
        if not (timed_out(run) or run.get("rc") == KILLED_RC) or perf.get("rows"):
            reasons.append(gates_line)
    fallback = [finding for finding in (run.get("diagnosis") or {}).get("findings") or []
                if finding.get("code") in TRANSPORT_FALLBACK_CODES]
    if fallback and not reasons:
        reasons.append("{0}: NCCL did not use the expected transport ({1}): {2}; fix: {3}".format(
            title, run.get("expected_transport", "?"), fallback[0].get("cause"), fallback[0].get("fix")))
    if not reasons and run.get("rc") not in (0, None):
        reasons.append("{0}: the benchmark printed a complete run but exited with rc {1}".format(title, run.get("rc")))
    if reasons:
        if root:
            reasons.append("  fix: " + str(root.get("fix")))
        reasons.extend("  " + line for line in diagnosis_lines(run.get("diagnosis"), skip=root))
    return not reasons, reasons


# Findings that say what happened to the job as a whole: a dead rank, or where it hung.
ROOT_CAUSE_CODES = ("rank_killed", "rank_failed", "hang_in_collective", "hang_in_rendezvous")


def root_cause(diagnosis):
    """The diagnosis' first finding when it names a dead rank or a hang (the engine orders the root
    cause first), else None."""
    findings = (diagnosis or {}).get("findings") or []
    first = findings[0] if findings and isinstance(findings[0], dict) else None
    if first and first.get("code") in ROOT_CAUSE_CODES and first.get("severity") == "error":
        return first
    return None


def timed_out(run):
    """Whether the timeout stopped the run: 124 is timeout's own code; 137 is any KILL (the OOM
    killer's too), the timeout's only when the run lasted timeout_s."""
    if run.get("rc") == TIMEOUT_RC:
        return True
    duration, limit = run.get("duration_s"), run.get("timeout_s")
    return (run.get("rc") == KILLED_RC and isinstance(duration, (int, float)) and isinstance(limit, (int, float))
            and duration >= limit)


def diagnosis_lines(diagnosis, skip=None):
    """'host: cause -> fix' for each error finding of an nccl_diagnose result that is a cause of its
    own (those that follow from another are consequences, not causes)."""
    if not diagnosis:
        return []
    return ["{0}: {1} -> {2}".format(finding.get("host"), finding.get("cause"), finding.get("fix"))
            for finding in diagnosis.get("findings", []) if finding.get("severity") == "error"
            and finding is not skip and not finding.get("consequence_of")]


def network_verdict(network):
    """(passed, reasons) from the ncclkit_network facts of each host (nccl_network)."""
    reasons, seen = [], set()
    for host, facts in sorted((network or {}).items()):
        if isinstance(facts, dict) and facts.get("passed") is False:
            verdicts = facts.get("verdicts") or ["nccl_network reported a failure"]
            # Every host carries the cluster's whole verdict list: say each verdict once.
            for text in (_verdict_text(verdict) for verdict in verdicts):
                if text not in seen:
                    seen.add(text)
                    reasons.append("network ({0}): {1}".format(host, text))
    return not reasons, reasons


def _verdict_text(verdict):
    if isinstance(verdict, dict):
        return verdict.get("message") or verdict.get("msg") or json.dumps(verdict, sort_keys=True)
    return str(verdict)


def build_report(data, created=None):
    """The report dict from what the role collected: hosts, runs, network, notes, settings, plan."""
    _check_data(data)
    created = created or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    hosts = data.get("hosts") or {}
    runs = []
    notes = list(data.get("notes") or [])
    # A run the role would make only where it can (the Gloo run without torch) is a note, not a failure.
    records, skipped = [], set()
    for run in data.get("runs") or []:
        if run.get("optional") and not run.get("ran", True):
            skipped.add(run.get("name"))
            notes.append("{0} skipped: {1}".format(run_title(run), run.get("not_run_reason") or "unknown reason"))
        else:
            records.append(run)
    # Each node on its own first, then across nodes: the order in which to read them.
    for run in sorted(records, key=lambda run: (run.get("name") in ("multi", GLOO_RUN), str(run.get("host")))):
        passed, reasons = run_verdict(run)
        runs.append(dict(run, title=run_title(run), timed_out=timed_out(run), passed=passed, reasons=reasons))
    network = {host: facts for host, facts in (data.get("network") or {}).items() if facts}
    network_ok, network_reasons = network_verdict(network)
    missing = sorted(host for host, record in hosts.items() if not record)
    reasons = [line for run in runs for line in run["reasons"]] + network_reasons
    reasons += ["{0}: no validation data: the host failed or was unreachable before nccl_validate "
                "ran (see the play's output)".format(host) for host in missing]
    reasons += unrecorded_runs(data.get("plan") or {}, runs, missing, skipped)
    skipped = {host: record.get("skip_reason") for host, record in hosts.items()
               if record and not record.get("gpus")}
    if skipped:
        notes.insert(0, "GPU checks skipped on {0}: {1}".format(
            ", ".join(sorted(skipped)), "; ".join(sorted({reason or "no GPU" for reason in skipped.values()}))))
    passed = not reasons
    # Nothing failed because nothing ran: that is no pass (`passed` stays true so the play goes on).
    verdict = "failed" if not passed else "passed" if runs else "skipped"
    return {
        "report_version": REPORT_VERSION,
        "created": created,
        "passed": passed,
        "verdict": verdict,
        "reasons": reasons,
        "notes": notes,
        "hosts": hosts,
        "runs": runs,
        "network": network,
        "network_passed": network_ok if network else None,
        "adaptations": {host: list(lines) for host, lines in sorted((data.get("adaptations") or {}).items())
                        if lines},
        "settings": data.get("settings") or {},
    }


def unrecorded_runs(plan, runs, missing, skipped=()):
    """A reason for each planned run without a record: its host failed before the run (a host
    without any data has its own reason already; a run skipped where it could not run has a note)."""
    recorded = {(run.get("name"), run.get("host")) for run in runs}
    reasons = ["single-node on {0}: planned but never run: the host failed before its run (see the play's "
               "output)".format(host) for host in plan.get("single") or []
               if ("single", host) not in recorded and host not in missing]
    if plan.get("gloo") and GLOO_RUN not in skipped and not any(run.get("name") == GLOO_RUN for run in runs):
        reasons.append("Gloo all-reduce: planned but never run: a host failed before it (see the play's output)")
    if plan.get("multi") and not any(run.get("name") == "multi" for run in runs):
        reasons.append("multi-node across {0}: planned but never run: the launch host {1} failed before it "
                       "(see the play's output)".format(", ".join(plan.get("multi_hosts") or []) or "?",
                                                        plan.get("launch_host") or "?"))
    return reasons


# What each key of the data must be, and what it holds.
_DATA_TYPES = {"hosts": (dict, dict), "runs": (list, dict), "network": (dict, dict), "notes": (list, str),
               "adaptations": (dict, list),
               "settings": (dict, None), "plan": (dict, None)}


def _check_data(data):
    """NcclReportError, not a traceback, for data the role would never send."""
    if not isinstance(data, dict):
        raise NcclReportError("the report data must be a dict with hosts, runs, network and settings")
    for key, (kind, item_kind) in _DATA_TYPES.items():
        value = data.get(key)
        if value is None:
            continue
        if not isinstance(value, kind):
            raise NcclReportError("the report data's {0} must be a {1}, not {2}: pass what the nccl_validate "
                                  "role collects".format(key, kind.__name__, type(value).__name__))
        items = value.values() if isinstance(value, dict) else value
        # A host or network record may be None (no data); a run record may not.
        bad = [item for item in items if (item is None and key == "runs")
               or (item_kind and item is not None and not isinstance(item, item_kind))]
        if bad:
            raise NcclReportError("the report data's {0} must hold {1}s, not {2!r}: pass what the nccl_validate "
                                  "role collects".format(key, item_kind.__name__, bad[0]))


def summary_line(report):
    # Decided on the hosts, not the runs: GPU hosts whose runs did not happen, and hosts without
    # data, are failures (reasons), not skipped checks.
    records = list(report["hosts"].values())
    no_gpu_anywhere = bool(records) and all(record and not record.get("gpus") for record in records)
    notes = [NCCL_NOT_EXERCISED] if any(run.get("name") == GLOO_RUN and run.get("ran", True)
                                        for run in report["runs"]) and no_gpu_anywhere else []
    notes += ["GPU checks skipped: no host has a GPU"] if no_gpu_anywhere else []
    return "nccl_validate {0}: {1} run(s), {2} passed{3}".format(
        report["verdict"].upper(), len(report["runs"]), sum(1 for run in report["runs"] if run["passed"]),
        " ({0})".format("; ".join(notes)) if notes else "")


# -- Markdown ------------------------------------------------------------------------------


def render_markdown(report):
    lines = ["# ncclkit validation report: {0}".format(report["verdict"].upper()), "",
             "Created {0} (UTC). {1}.".format(report["created"], summary_line(report)), ""]
    if report["reasons"]:
        lines += ["## Why it failed", ""] + ["- " + _md(line.strip()) if not line.startswith("  ")
                                             else "  - " + _md(line.strip()) for line in report["reasons"]] + [""]
    if report["notes"]:
        lines += ["## Notes", ""] + ["- " + _md(note) for note in report["notes"]] + [""]
    if report.get("adaptations"):
        lines += ["## Adapted to the hosts", ""] + ["- {0}: {1}".format(_md(host), _md(line))
                                                    for host, host_lines in report["adaptations"].items()
                                                    for line in host_lines] + [""]
    lines += _hosts_section(report["hosts"])
    for run in report["runs"]:
        lines += _run_section(run)
    if report["network"]:
        lines += _network_section(report["network"])
    if report["settings"]:
        lines += ["## Settings", "", "```json", json.dumps(report["settings"], indent=2, sort_keys=True), "```", ""]
    return "\n".join(lines).rstrip() + "\n"


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
                _num(perf["peak_busbw_gbps"]), human_size(perf.get("bytes")), _num(perf.get("seconds"))))
    elif perf:
        facts += ["ranks {0} on {1}".format(perf.get("ranks"), ", ".join(perf.get("hosts") or []) or "?"),
                  "NCCL {0}".format(perf.get("nccl_version") or "?"),
                  "nccl-tests {0}".format(perf.get("nccl_tests_version") or "?")]
        if perf.get("ranks") == 1:
            facts.append("busbw is 0 by definition with one rank")
        elif perf.get("peak_busbw_gbps") is not None:
            facts.append("peak busbw {0} GB/s at {1}".format(_num(perf["peak_busbw_gbps"]),
                                                             human_size(perf.get("peak_busbw_size_bytes"))))
    lines += ["- " + "; ".join(facts)]
    lines += ["- " + _md(line.strip()) for line in run["reasons"][1:] if line.startswith("  ")]
    lines.append("")
    if perf and perf.get("gates"):
        lines += ["| gate | limit | measured | verdict |", "|---|---|---|---|"]
        lines += ["| {0} | {1} | {2} | {3} |".format(gate["name"], _num(gate.get("limit")), _num(gate.get("measured")),
                                                     "pass" if gate.get("passed") else "FAIL: " + _md(gate["message"]))
                  for gate in perf["gates"]]
        lines.append("")
    rows = (perf or {}).get("rows") or []
    if rows:
        lines += ["| size | time (us) | algbw (GB/s) | busbw (GB/s) | in-place busbw | #wrong |",
                  "|---:|---:|---:|---:|---:|---:|"]
        for row in rows:
            out, inp = row.get("out_of_place") or {}, row.get("in_place") or {}
            lines.append("| {0} | {1} | {2} | {3} | {4} | {5} |".format(
                human_size(row.get("size_bytes")), _num(out.get("time_us")), _num(out.get("algbw_gbps")),
                _num(out.get("busbw_gbps")), _num(inp.get("busbw_gbps")), _num(out.get("wrong"))))
        lines.append("")
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
        texts = [_verdict_text(verdict) for verdict in facts.get("verdicts") or []]
        lines += ["  - " + _md(text) for text in texts if text not in seen]
        seen.update(texts)
    return lines + [""]


def human_size(size):
    if not isinstance(size, int):
        return "?"
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= factor and size % factor == 0:
            return "{0} {1}".format(size // factor, unit)
    return "{0} B".format(size)


def _num(value):
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return "{0:g}".format(value)
    return str(value)


def _md(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


# -- writing -------------------------------------------------------------------------------


def stage(parent, name, now=None):
    """Create a staging folder of its own for this run (two runs in the same second get two) with
    its raw/ folder, both 0700: the raw outputs fetched into it are the hosts' until redacted.
    Stale staging folders of interrupted plays are removed first. Returns the staging path."""
    _check_name(name)
    parent = os.path.abspath(parent)
    try:
        os.makedirs(parent, mode=0o700, exist_ok=True)
        staging = tempfile.mkdtemp(prefix="." + name + ".", suffix=PARTIAL_SUFFIX, dir=parent)
        os.mkdir(os.path.join(staging, RAW_DIR), 0o700)
    except OSError as error:
        raise NcclReportError("cannot create a report folder in {0}: {1}; set nccl_validate_report_parent to a "
                              "folder the controller's user can write".format(parent, error.strerror or error))
    remove_stale_staging(parent, now)
    return staging


def remove_stale_staging(parent, now=None):
    """Remove .<timestamp>.<random>.partial folders untouched for STALE_STAGING_S: a play
    interrupted before writing its report left them; a running play's folder changes with each fetch."""
    now = time.time() if now is None else now
    parent = os.path.abspath(parent)
    for entry in os.listdir(parent):
        path = os.path.join(parent, entry)
        if _STAGING_NAME.match(entry) and os.path.isdir(path) and now - _newest_mtime(path) > STALE_STAGING_S:
            shutil.rmtree(path, ignore_errors=True)


def _newest_mtime(folder):
    newest = os.path.getmtime(folder)
    for root, dirs, files in os.walk(folder):
        for entry in dirs + files:
            try:
                newest = max(newest, os.lstat(os.path.join(root, entry)).st_mtime)
            except OSError:
                pass
    return newest


def _checked_staging(parent, name, staging):
    """The staging folder stage() made for this report, or NcclReportError: write_report removes
    it on failure, so it must be ours."""
    staging = os.path.abspath(staging)
    entry = os.path.basename(staging)
    if (os.path.dirname(staging) != os.path.abspath(parent) or not _STAGING_NAME.match(entry)
            or not entry.startswith("." + name + ".") or not os.path.isdir(staging)
            or os.path.islink(staging)):
        raise NcclReportError("{0} is not a staging folder of this report (made by state=staged for {1} in {2}): "
                              "pass the staging path that step returned".format(staging, name, parent))
    return staging


def write_report(parent, name, report, staging=None):
    """Redact the raw outputs, write report.json and report.md into the staging folder (stage()'s,
    or a new one), then rename it into place as <parent>/<name> (or <name>-2, -3 ...).

    Returns the final folder. On any error the staging folder is removed and NcclReportError
    raised: a report folder either is complete or does not exist, and no unredacted file stays.
    """
    _check_name(name)
    staging = stage(parent, name) if staging is None else _checked_staging(parent, name, staging)
    try:
        redact_raw_json(os.path.join(staging, RAW_DIR))
        _write_file(os.path.join(staging, REPORT_JSON), json.dumps(report, indent=2, sort_keys=True,
                                                                   allow_nan=False) + "\n")
        _write_file(os.path.join(staging, REPORT_MD), render_markdown(report))
        _owner_only(staging)
        final = _rename_free(staging, os.path.join(os.path.abspath(parent), name))
        _fsync_dir(os.path.dirname(final))
    except Exception as error:  # RecursionError and MemoryError too: never leave the raw files
        shutil.rmtree(staging, ignore_errors=True)
        raise NcclReportError("could not write the report in {0}: {1}; nothing was left behind".format(
            parent, getattr(error, "strerror", None) or error or type(error).__name__))
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return final


def _owner_only(folder):
    """Folders 0700, files 0600: fetch writes with the controller's umask."""
    os.chmod(folder, 0o700)
    for root, dirs, files in os.walk(folder):
        for entry in dirs:
            os.chmod(os.path.join(root, entry), 0o700)
        for entry in files:
            path = os.path.join(root, entry)
            if not os.path.islink(path):
                os.chmod(path, 0o600)


def _check_name(name):
    if not name or os.sep in name or name.startswith(".") or name in ("..",):
        raise NcclReportError("report name {0!r} must be a plain folder name such as 20261202T090419Z".format(name))


def _rename_free(source, path):
    """Rename source to path, or path-2, path-3 ...: the first name no other run took, even one
    that renamed its report into place a moment ago (a report folder is never empty, so renaming
    onto it fails rather than replaces it)."""
    number = 1
    while True:
        candidate = path if number == 1 else "{0}-{1}".format(path, number)
        if not os.path.lexists(candidate):
            try:
                os.rename(source, candidate)
                return candidate
            except OSError as error:
                if error.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                    raise
        number += 1


def _write_file(path, text):
    folder = os.path.dirname(path)
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def _fsync_dir(folder):
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


# -- redaction of nccl-tests' -J files -----------------------------------------------------

# One JSON token: a string (maybe cut off at the end of the file), a structural character, or a
# run of anything else (numbers, literals, garbage). Whitespace is copied as it is.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)|[{}\[\],:]|\s+|[^\s{}\[\],:"]+', re.S)


def redact_json_text(text):
    """(text, removed): every "env" list of a -J file, at any depth, keeps only the allow-listed
    NAME=value strings; anything else in it (other names, nested values, a string cut off with the
    file) is dropped. A token walk with an explicit stack: no depth raises RecursionError, and a
    file cut short with the run is redacted as far as it goes."""
    out, removed = [], 0
    # One frame per open container: [kind, key of the value being read, expecting a key].
    stack = []
    env = None  # while inside an env list: {"depth", "kept", "top"}
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        token = match.group(0)
        position = match.end()
        if env is not None:
            if token in ("[", "{"):
                env["depth"] += 1
                if env["depth"] == 2:
                    removed += 1
                    env["dropped"] += 1
            elif token in ("]", "}"):
                env["depth"] -= 1
                if env["depth"] == 0:
                    out.append("[" + ", ".join(env["kept"]) + "]")
                    if env["top"] and env["dropped"]:
                        out.append(', "env_removed_by_ncclkit": {0}'.format(env["dropped"]))
                    env = None
                    stack.pop()
            elif env["depth"] == 1 and token.startswith('"'):
                if _allowed_string(token):
                    env["kept"].append(token)
                else:
                    removed += 1
                    env["dropped"] += 1
            elif env["depth"] == 1 and not token.isspace() and token != ",":
                removed += 1
                env["dropped"] += 1
            continue
        frame = stack[-1] if stack else None
        if token == "{":
            stack.append(["{", None, True])
        elif token == "[":
            if frame and frame[0] == "{" and frame[1] == "env":
                stack.append(["[", None, False])
                env = {"depth": 1, "kept": [], "dropped": 0, "top": len(stack) == 2}
                continue
            stack.append(["[", None, False])
        elif token in ("]", "}"):
            if stack:
                stack.pop()
        elif token == "," and frame and frame[0] == "{":
            frame[1], frame[2] = None, True
        elif token == ":" and frame and frame[0] == "{":
            frame[2] = False
        elif token.startswith('"') and frame and frame[0] == "{" and frame[2]:
            frame[1] = _string_value(token)
        out.append(token)
    if env is not None:  # cut off inside an env list: close it with what may stay
        out.append("[" + ", ".join(env["kept"]) + "]")
    return "".join(out), removed


def _string_value(token):
    try:
        return json.loads(token)
    except ValueError:
        return None


def _allowed_string(token):
    value = _string_value(token)
    return isinstance(value, str) and allowed_env_entries([value]) == [value]


def redact_raw_file(path):
    """Rewrite one raw -J file in place, redacted (see redact_json_text); 0600."""
    with open(path, encoding="utf-8", errors="replace") as stream:
        text = stream.read()
    redacted, _removed = redact_json_text(text)
    _write_file(path, redacted)


def redact_raw_json(raw_dir):
    """nccl-tests' -J files record the launching process's whole environment (cloud credentials
    included); in the report they keep only the allow-listed NCCL/CUDA/MPI names."""
    for folder, _dirs, files in os.walk(raw_dir):
        for file_name in files:
            if file_name.endswith(".json"):
                redact_raw_file(os.path.join(folder, file_name))


# -- reading -------------------------------------------------------------------------------


def report_folder(path):
    """The report folder of a path naming it or its report.json: the plot goes beside report.json."""
    path = str(path)
    return os.path.dirname(os.path.abspath(path)) if os.path.basename(path) == REPORT_JSON else path


def load_report(report_dir):
    """The report dict of a report folder (or of its report.json)."""
    path = os.path.join(report_folder(report_dir), REPORT_JSON)
    try:
        with open(path, encoding="utf-8") as stream:
            report = json.load(stream)
    except FileNotFoundError:
        raise NcclReportError("{0} does not exist: pass a folder that nccl_validate wrote "
                              "(ncclkit-report/<UTC timestamp>/)".format(path))
    except (OSError, ValueError) as error:
        raise NcclReportError("cannot read {0}: {1}".format(path, getattr(error, "strerror", None) or error))
    if not isinstance(report, dict) or report.get("report_version") != REPORT_VERSION \
            or not isinstance(report.get("runs"), list):
        raise NcclReportError("{0} is not an ncclkit report (report_version {1} with a runs list expected)"
                              .format(path, REPORT_VERSION))
    return report


def bandwidth_series(report):
    """[{label, sizes, busbw, algbw}]: out-of-place bandwidth per message size, one per run with rows."""
    series = []
    for run in report.get("runs", []):
        points = [(row["size_bytes"], row["out_of_place"]["busbw_gbps"], row["out_of_place"].get("algbw_gbps"))
                  for row in ((run.get("perf") or {}).get("rows") or [])
                  if isinstance(row.get("size_bytes"), int) and row["size_bytes"] > 0
                  and isinstance(row.get("out_of_place"), dict)
                  and isinstance(row["out_of_place"].get("busbw_gbps"), (int, float))]
        if points:
            points.sort()
            series.append({"label": run.get("title") or run_title(run),
                           "sizes": [point[0] for point in points],
                           "busbw": [point[1] for point in points],
                           "algbw": [point[2] for point in points]})
    if not series:
        raise NcclReportError("the report has no measured rows (no run produced bus bandwidth numbers), so "
                              "there is nothing to plot; see its report.md for why")
    return series
