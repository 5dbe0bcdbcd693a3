"""The verdict of an nccl_validate run: from the run records, the hosts' records and the network
facts to the report dict (passed, reasons with the root cause first, notes) and its summary line.

Pure Python 3.8+ standard library: the nccl_report module and the ncclkit package share it.

A run record (one per benchmark launch, made by the role) holds: name ("single", "multi" or
"gloo"), host (where it was launched), hosts (the hosts it spans), command (argv), ran (false
when it could not be started, with not_run_reason), rc, timeout_s, duration_s, expected_ranks,
min_busbw_gbps, perf (the nccl_perf facts, or None), perf_error (why the output could not be
read), diagnosis (nccl_diagnose's findings and hosts, or None), stderr_tail and raw (paths).
"""

from __future__ import annotations

import datetime
import json

from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.root_cause import ROOT_CODES
from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.gates import FALLBACK_CODES, gate_rows, uncalibrated_notes

REPORT_VERSION = 1

# Exit codes of coreutils timeout: the command ran too long (TERM), or still ran after the grace (KILL).
TIMEOUT_RC = 124
KILLED_RC = 137


class NcclReportError(ValueError):
    """A report cannot be built, written or read; the message names the cause and the fix."""


# nccl_diagnose's findings for a run that fell back from IB/eRDMA/EFA to sockets (or another provider).
TRANSPORT_FALLBACK_CODES = FALLBACK_CODES


# The run nccl_validate makes on hosts without GPU: it proves the launcher, rendezvous and Gloo path.
GLOO_RUN = "gloo"
NCCL_NOT_EXERCISED = "Gloo/CPU: NCCL not exercised"
# nccl_validate_net_loopback's run: two ranks of one host that NCCL takes for two nodes.
NET_LOOPBACK_RUN = "net_loopback"


def run_title(run):
    if run.get("name") == GLOO_RUN:
        return "Gloo all-reduce across " + ", ".join(run.get("hosts") or [run.get("host") or "?"])
    if run.get("name") == "multi":
        return "multi-node across " + ", ".join(run.get("hosts") or [run.get("host") or "?"])
    if run.get("name") == NET_LOOPBACK_RUN:
        return "node-local NET test on " + str(run.get("host"))
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


# Findings that say what happened to the job as a whole (a dead rank, or where it hung): the
# diagnosis engine's list.
ROOT_CAUSE_CODES = ROOT_CODES


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
            # The cluster's verdicts are stored once, on the report host: the others name it.
            if "verdicts" not in facts and facts.get("report_host") in network:
                continue
            verdicts = facts.get("verdicts") or ["nccl_network reported a failure"]
            # Facts recorded before they were stored once carry the whole list on every host: each once.
            for text in (verdict_text(verdict) for verdict in verdicts):
                if text not in seen:
                    seen.add(text)
                    reasons.append("network ({0}): {1}".format(host, text))
    return not reasons, reasons


def verdict_text(verdict):
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
        runs.append(dict(run, title=run_title(run), timed_out=timed_out(run), passed=passed, reasons=reasons,
                         gate_rows=gate_rows(run)))
    # A gate without a threshold to hold the run to is said, never counted as a pass.
    notes += uncalibrated_notes(runs)
    network = {host: facts for host, facts in (data.get("network") or {}).items() if facts}
    network_ok, network_reasons = network_verdict(network)
    missing = sorted(host for host, record in hosts.items() if not record)
    reasons = [line for run in runs for line in run["reasons"]] + network_reasons
    reasons += ["{0}: no validation data: the host failed or was unreachable before nccl_validate "
                "ran (see the play's output)".format(host) for host in missing]
    reasons += unrecorded_runs(data.get("plan") or {}, runs, missing, skipped)
    # The slow-node search says who is to blame: last, so that it ends the play's message.
    reasons += list((data.get("find_slow") or {}).get("reasons") or [])
    notes += list((data.get("find_slow") or {}).get("notes") or [])
    skipped = {host: record.get("skip_reason") for host, record in hosts.items()
               if record and not record.get("gpus")}
    if skipped:
        notes.insert(0, "GPU checks skipped on {0}: {1}".format(
            ", ".join(sorted(skipped)), "; ".join(sorted({reason or "no GPU" for reason in skipped.values()}))))
    passed = not reasons
    # Nothing failed because nothing ran: that is no pass (`passed` stays true so the play goes on).
    ran = runs or (data.get("find_slow") or {}).get("pairs")
    verdict = "failed" if not passed else "passed" if ran else "skipped"
    report = {
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
    # Measurements a play may add (iperf3 per link, the autotune grid): carried as given, shown by report.html.
    report.update({key: data[key] for key in OPTIONAL_DATA if data.get(key)})
    return report


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
               "settings": (dict, None), "plan": (dict, None),
               "link_bandwidth": (list, dict), "autotune": (dict, None),
               "find_slow": (dict, None)}
OPTIONAL_DATA = ("link_bandwidth", "autotune", "find_slow")


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
