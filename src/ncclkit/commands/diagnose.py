"""`ncclkit diagnose LOG...`: the root cause of a failed or hung job, from its logs. No Ansible needed.

Several logs (one per node or rank, PyTorch flight-recorder dumps, NCCL RAS reports, forensics
output) are read as one job; `-` reads stdin. Prints a short verdict, the root cause's fix and the
other findings; --json prints {"verdict", "findings": [{code, severity, host, rank, cause, fix,
evidence, consequence_of, confidence}]}, root cause first. docs/diagnosis.md lists the codes.
With -i INVENTORY it also runs `ncclkit check` on the job's cluster now (diagnosis.live_check): a
rendezvous or connection failure whose logs do not say which host's NIC, port or name is wrong takes
its host and reason from the check (`explained_by` lists the check's codes; --json adds "live_check").
Exit codes: 0 no error finding, 1 an error finding (the first is the root cause; a run that did not
finish is one), 3 bad input or nothing to judge (no line of NCCL, torch, a launcher or nccl-tests).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis import live_check
from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis import log as nccl_log
from ncclkit import exitcodes
from ncclkit.inventory import InventoryError, group_hosts

FINDING_KEYS = ("code", "severity", "host", "rank", "cause", "fix", "evidence", "consequence_of", "confidence",
                "explained_by")
TRANSPORTS = ("any", "socket", "ib", "efa")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "diagnose", help="name the root cause of a failed or hung job from its logs (no Ansible needed)",
        description="Read NCCL, torch, torchrun, Gloo and MPI logs (several: one job), flight-recorder dumps "
                    "and NCCL RAS reports, and name the root cause with its fix.")
    parser.add_argument("logs", nargs="+", metavar="LOG", help="log file, dump or report; - reads stdin")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--cluster-cidr", help="the cluster network (e.g. 10.0.0.0/16): NICs outside it are errors")
    parser.add_argument("--expected-transport", choices=TRANSPORTS, default="any",
                        help="the transport NCCL should use between hosts (default: any)")
    parser.add_argument("--default-host", help="host for lines that name none")
    parser.add_argument("-i", "--inventory", type=Path,
                        help="the job's cluster: run `ncclkit check` on it now and take the host and reason of a "
                             "rendezvous or connection failure from what it finds")
    parser.set_defaults(handler=diagnose_command)


def finding_document(finding: dict) -> dict:
    """One finding in the stable JSON form; evidence names its file and line."""
    evidence = finding.get("evidence") or ""
    if finding.get("source") and finding.get("line"):
        evidence = f"{finding['source']}:{finding['line']}: {evidence}"
    return dict({key: finding.get(key) for key in FINDING_KEYS}, evidence=evidence)


def diagnose_command(args: argparse.Namespace) -> int:
    if args.logs.count("-") > 1:
        print("ncclkit diagnose: '-' (stdin) may be given once", file=sys.stderr)
        return exitcodes.USAGE
    inputs = [sys.stdin.buffer if name == "-" else name for name in args.logs]
    try:
        result = nccl_log.read_nccl_log_files(inputs, cluster_cidr=args.cluster_cidr,
                                              expected_transport=args.expected_transport,
                                              default_host=args.default_host)
    except nccl_log.NcclLogError as error:
        print(f"ncclkit diagnose: {error}", file=sys.stderr)
        return exitcodes.BAD_INPUT
    if result.get("judged") is not False and args.inventory is not None:
        try:
            hosts = group_hosts(args.inventory, "cluster")
        except InventoryError as error:
            print(f"ncclkit diagnose: {error}", file=sys.stderr)
            return exitcodes.BAD_INPUT
        from ncclkit.commands.check import run_check

        print(f"ncclkit diagnose: checking {len(hosts)} host(s) of {args.inventory} now, as `ncclkit check` does",
              file=sys.stderr)
        check = run_check(args.inventory, hosts, quiet=True)
        result = live_check.explain(result, check)
        result["live_check"] = {key: check[key] for key in ("verdict", "ready", "unreachable")}
    findings = result["findings"]
    if result.get("judged") is False:
        # Nothing recognisable is never HEALTHY: one line saying what was expected, exit 3.
        if args.json:
            print(json.dumps({"verdict": result["verdict"], "findings": []}, indent=2))
        print(f"ncclkit diagnose: {', '.join(map(str, args.logs))}: {result['verdict']}", file=sys.stderr)
        return exitcodes.BAD_INPUT
    if args.json:
        document = {"verdict": result["verdict"], "findings": [finding_document(f) for f in findings]}
        if "live_check" in result:
            document["live_check"] = result["live_check"]
        print(json.dumps(document, indent=2))
    else:
        print_human(result["verdict"], findings, result["notes"])
    return exitcodes.PROBLEM if any(f["severity"] == "error" for f in findings) else exitcodes.OK


def print_human(verdict: str, findings: list, notes: list) -> None:
    print(verdict)
    root = findings[0] if findings and findings[0]["severity"] == "error" else None
    if root:
        print(f"  fix: {root['fix']}")
        if root.get("confidence") == "low":
            print("  confidence: low (the evidence points at this cause without naming it)")
        print(f"  evidence: {finding_document(root)['evidence']}")
    others = [f for f in findings if f is not root and not f["consequence_of"] and f["severity"] != "info"]
    for finding in others:
        print(f"[{finding['severity']}] {finding['code']} ({finding['host']}): {finding['cause']}")
        print(f"  fix: {finding['fix']}")
    following: dict = {}
    for finding in findings:
        if finding["consequence_of"] and finding is not root:
            key = (finding["consequence_of"], finding["code"], finding["host"])
            following[key] = following.get(key, 0) + finding.get("count", 1)
    if following:
        parts = [f"{code} on {host}" + (f" (x{count})" if count > 1 else "")
                 for (dummy, code, host), count in following.items()]
        print(f"follows from {next(iter(following))[0]}: {', '.join(parts)}")
    infos = sum(1 for f in findings if f["severity"] == "info")
    if infos:
        print(f"({infos} info finding(s); --json lists them)")
    for note in notes:
        print(f"note: {note}")
