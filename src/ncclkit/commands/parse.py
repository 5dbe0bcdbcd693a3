"""`ncclkit parse OUTPUT`: nccl-tests output (text or -J JSON) -> the parsed run and its gates.

Prints a verdict line and the failed gates; --json prints {"verdict", "findings", "result"}: the
findings are the log diagnosis of the same output (root cause first, when NCCL or the launcher
said why it failed) followed by one finding per failed gate (code = the gate's name); result is
the chosen run with its gates, as the nccl_perf module returns it. `-` reads stdin.
"""

from __future__ import annotations

import argparse
import json
import sys

from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis import log as nccl_log
from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests import output as nccl_tests_output
from ncclkit import exitcodes
from ncclkit.commands.diagnose import finding_document

# Gates that fail because the run failed: the diagnosis's root cause explains them.
_FAILURE_GATES = ("require_complete", "no_error_lines")
_GATE_FIXES = {
    "require_complete": "read the run's error lines (and the findings before this one); rerun with NCCL_DEBUG=INFO",
    "no_error_lines": "read the error lines (and the findings before this one); rerun with NCCL_DEBUG=INFO",
    "expected_ranks": "launch one rank per GPU on every node (mpirun -np / -H host:slots, nccl-tests built MPI=1)",
    "max_wrong": "wrong results: check GPUs (nvidia-smi, dmesg Xid), NCCL_P2P_DISABLE=1 / NCCL_SHM_DISABLE=1 to "
                 "isolate the transport",
    "min_busbw_gbps": "below the bandwidth floor: check the transport NCCL chose (NCCL_DEBUG=INFO: IB/EFA vs "
                      "Socket) and the NIC speed; measure one host alone to compare",
    "avg_busbw_check": "nccl-tests' own -G check failed: see min_busbw_gbps",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("parse", help="parse nccl-tests output and gate it (bandwidth, errors, ranks)")
    parser.add_argument("output", metavar="OUTPUT", help="nccl-tests stdout or its -J JSON file; - reads stdin")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--run-index", type=int, default=0, help="which run when the output holds several")
    parser.add_argument("--min-busbw-gbps", type=float, help="lowest out-of-place busbw allowed, GB/s")
    parser.add_argument("--gate-min-size", type=int, metavar="BYTES",
                        help="gate busbw at every size from this one (default: the largest size only)")
    parser.add_argument("--max-wrong", type=int, default=0, help="wrong elements allowed (default 0)")
    parser.add_argument("--expected-ranks", type=int, help="ranks the run must have")
    parser.add_argument("--max-size-mib", type=int, default=64, metavar="MIB",
                        help="largest OUTPUT file read (default 64; a million rows print about 110 MiB)")
    parser.add_argument("--no-require-complete", dest="require_complete", action="store_false",
                        help="do not fail a run without its footer (an error line still fails it)")
    parser.set_defaults(handler=parse_command)


def parse_command(args: argparse.Namespace) -> int:
    try:
        if args.output == "-":
            data = sys.stdin.buffer.read(nccl_tests_output.DEFAULT_MAX_BYTES + 1)
            runs = nccl_tests_output.parse(data)
        else:
            runs = nccl_tests_output.parse_file(args.output, max_bytes=max(args.max_size_mib, 0) * 1024 * 1024)
            data = None
        facts = nccl_tests_output.summarize(runs, run_index=args.run_index, min_busbw_gbps=args.min_busbw_gbps,
                                            gate_min_size_bytes=args.gate_min_size, max_wrong=args.max_wrong,
                                            expected_ranks=args.expected_ranks,
                                            require_complete=args.require_complete)
    except nccl_tests_output.NcclTestsParseError as error:
        where = "" if args.output in str(error) else f"{'<stdin>' if args.output == '-' else args.output}: "
        print(f"ncclkit parse: {where}{error}", file=sys.stderr)
        return exitcodes.BAD_INPUT
    findings = _diagnosis(args.output, data) if not facts["passed"] else []
    root = findings[0]["code"] if findings and findings[0]["severity"] == "error" else None
    for gate in facts["gates"]:
        if not gate["passed"]:
            findings.append({"code": gate["name"], "severity": "error", "host": None, "rank": None,
                             "cause": gate["message"], "fix": _GATE_FIXES.get(gate["name"], ""),
                             "evidence": gate["message"],
                             "consequence_of": root if gate["name"] in _FAILURE_GATES else None})
    verdict = _verdict(facts, findings)
    if args.json:
        print(json.dumps({"verdict": verdict, "findings": [finding_document(f) for f in findings],
                          "result": facts}, indent=2))
    else:
        print(verdict)
        for finding in findings:
            if finding["severity"] != "info":
                follows = f" (follows from {finding['consequence_of']})" if finding["consequence_of"] else ""
                print(f"[{finding['severity']}] {finding['code']} ({finding['host'] or 'run'}){follows}: "
                      f"{finding['cause']}")
    return exitcodes.OK if facts["passed"] else exitcodes.PROBLEM


def _diagnosis(path: str, data) -> list:
    """The log diagnosis of a failed run's output: why it failed, when NCCL or the launcher said."""
    try:
        if data is None:
            result = nccl_log.read_nccl_log_files([path])
        else:
            result = nccl_log.read_nccl_log(data, source="<stdin>")
    except nccl_log.NcclLogError:
        return []
    return [f for f in result["findings"] if f["severity"] == "error"]


def _verdict(facts: dict, findings: list) -> str:
    what = facts["collective"] or "nccl-tests"
    hosts = len(facts["hosts"] or [])
    shape = f"{facts['ranks']} rank(s) on {hosts} host(s)" if facts["ranks"] else "no device list"
    if facts["passed"]:
        peak = facts["peak_busbw_gbps"]
        size = facts["peak_busbw_size_bytes"]
        bandwidth = f"peak busbw {peak:g} GB/s at {size} B" if peak is not None else "no busbw measured"
        return f"PASSED: run {facts['run_index']} ({what}), {shape}, {bandwidth}"
    first = findings[0]
    return f"FAILED: run {facts['run_index']} ({what}), {shape}: {first['code']}: {first['cause']}"
