"""One nccl_validate benchmark launch: why it cannot start, its command line, whether its output
is diagnosed, and the record report.yml reads.

The role registers what each step returned (stat, nccl_run, nccl_perf, nccl_diagnose, fetch);
these functions turn those results into decisions and the run's record. A run never fails the
host here: every outcome becomes a record.

Pure Python 3.8+ standard library, plus ansible-core's boolean parser (the `bool` filter's).
"""

from __future__ import annotations

import re

from ansible.module_utils.parsing.convert_bool import boolean

RAW_PATH = re.compile(r"^.*/(raw/[^/]+/[^/]+)$")


def as_int(value, default=0):
    """`value` as Jinja's int filter reads it: an int, or the int of a float, else `default`."""
    try:
        return int(value)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError):
            return default


def as_float(value, default=0.0):
    """`value` as Jinja's float filter reads it, else `default`."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def unusable_programs(stat_results):
    """The paths whose stat result does not show an executable file (missing ones included)."""
    return [r.get("item") for r in stat_results or []
            if (r.get("stat") or {}).get("executable") is not True]


def not_run_reason(stat_results, host_view, run_name, launcher, host):
    """'' when the run can start; else why not, and the fix.

    `host_view` is nccl_validate_host (bin_dir, nccl_tests.reason); `launcher` the argv prefix
    (empty for a single-host run); `stat_results` the stat of the benchmark and the launcher."""
    host_view = host_view or {}
    if not host_view.get("bin_dir"):
        return ("nccl-tests is not available ({}): run the nccl_tests role, or set nccl_validate_bin_dir to a "
                "folder holding all_reduce_perf".format((host_view.get("nccl_tests") or {}).get("reason")))
    if run_name == "multi" and not launcher:
        return ("no launcher for the multi-node run: ncclkit_launch.mpirun is not set; run the nccl_profile role "
                "or set nccl_validate_mpirun")
    unusable = unusable_programs(stat_results)
    if unusable:
        return ("{} is missing or not executable on {}: run the nccl_tests and nccl_profile roles, or correct "
                "nccl_validate_bin_dir and nccl_validate_mpirun".format(", ".join(str(u) for u in unusable), host))
    return ""


def benchmark_argv(launcher, binary, sizes, gpus_per_process, json_file, json_output):
    """The launch command: the launcher's argv, then the benchmark with nccl-tests' options.

    `sizes`: min_bytes, max_bytes, step_factor, iters, warmup_iters, check (as the user gave them:
    "1G" stays "1G"); `json_file`: the -J output, written only when `json_output` (nccl-tests
    2.17.3 and newer)."""
    argv = list(launcher or []) + [
        binary,
        "-b", str(sizes["min_bytes"]), "-e", str(sizes["max_bytes"]), "-f", str(sizes["step_factor"]),
        "-g", str(gpus_per_process), "-n", str(sizes["iters"]), "-w", str(sizes["warmup_iters"]),
        "-c", str(sizes["check"]),
    ]
    if boolean(json_output, strict=False):
        argv += ["-J", json_file]
    return argv


def perf_facts(perf):
    """nccl_perf's facts, or None when it returned none (its output was unreadable)."""
    facts = (perf or {}).get("ansible_facts")
    return facts.get("nccl_perf") if isinstance(facts, dict) else None


def needs_diagnosis(run, perf, expected_transport):
    """Whether nccl_diagnose reads the run's output: a failed or unreadable run, and a multi-node
    run on IB/eRDMA/EFA hosts even when it passed (a silent fall-back to sockets is a failure)."""
    facts = perf_facts(perf)
    return (as_int((run or {}).get("rc", -1), -1) != 0 or facts is None or not facts.get("passed")
            or expected_transport != "any")


def run_record(run, context, perf, diagnosis, fetched):
    """The record of a run that started.

    `context`: name, host, hosts, command, timeout_s, expected_ranks, expected_transport,
    min_busbw_gbps; `run`, `perf`, `diagnosis`, `fetched`: what nccl_run, nccl_perf, nccl_diagnose
    (skipped: no diagnosis) and the fetch loop registered."""
    run, perf, diagnosis, fetched = (r or {} for r in (run, perf, diagnosis, fetched))
    facts = perf_facts(perf)
    if "findings" in diagnosis:
        diagnosed = {"findings": diagnosis["findings"],
                     "hosts": diagnosis["ansible_facts"]["nccl_diagnose"]["hosts"]}
    else:
        diagnosed = None
    return {
        "name": context["name"],
        "host": context["host"],
        "hosts": context["hosts"],
        "command": context["command"],
        "ran": True,
        "rc": as_int(run.get("rc", -1)),
        "timeout_s": as_int(context["timeout_s"]),
        # nccl_report tells a timeout (it lasted timeout_s) from another KILL (OOM) with it.
        "duration_s": as_float(run.get("duration_s", 0)),
        "forensics": run.get("forensics", []),
        "expected_ranks": as_int(context["expected_ranks"]),
        "expected_transport": context["expected_transport"],
        "min_busbw_gbps": as_float(context["min_busbw_gbps"]),
        "perf": facts,
        "perf_error": None if facts is not None else perf.get("msg", ""),
        "diagnosis": diagnosed,
        "stderr_tail": run["stderr_lines"] if "stderr_lines" in run else [run.get("msg", "")],
        "raw": [RAW_PATH.sub(r"\1", str(r["dest"])) for r in fetched.get("results") or [] if "dest" in r],
    }
