"""`ncclkit check -i INVENTORY`: will multi-node training start here? Reads only.

Runs playbooks/check.yml (nccl_preflight with its check step) through ansible-runner and prints
one verdict line per host, then the findings (most severe first); --json prints the document
{"verdict", "ready", "verdicts", "findings", "unreachable", "master"}. docs/check.md lists the codes.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from ncclkit import exitcodes
from ncclkit.inventory import InventoryError, group_hosts
from ncclkit.paths import collection_root


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("check", help="will multi-node training start here? (reads only)")
    parser.add_argument("-i", "--inventory", required=True, help="inventory file or folder")
    parser.add_argument("--json", action="store_true", help="print the findings as one JSON document")
    parser.set_defaults(handler=check_command)


def cluster_hosts(inventory: Path) -> list[str]:
    """The hosts of the inventory's `cluster` group, or InventoryError."""
    return group_hosts(inventory, "cluster")


def check_command(args: argparse.Namespace) -> int:
    inventory = Path(args.inventory)
    try:
        hosts = cluster_hosts(inventory)
    except InventoryError as error:
        print(f"ncclkit check: {error}", file=sys.stderr)
        return exitcodes.BAD_INPUT
    document = run_check(inventory, hosts)
    if args.json:
        print(json.dumps(document, indent=2))
    else:
        print_human(document)
    if document["unreachable"]:
        return exitcodes.UNREACHABLE
    if document["check"] is None:
        return exitcodes.PROBLEM
    return exitcodes.OK if document["ready"] else exitcodes.PROBLEM


def run_check(inventory: Path, hosts: list[str], limit: str | None = None, quiet: bool = False) -> dict:
    """Run playbooks/check.yml on the inventory and return the check's document (build_document);
    quiet: the play's own output is not printed (launch and diagnose print their own)."""
    import contextlib
    import io

    from ncclkit.runner import run_playbook  # ansible-runner is slow to import

    root = collection_root()
    collector = CheckCollector()
    with contextlib.redirect_stdout(io.StringIO()) if quiet else contextlib.nullcontext():
        result = run_playbook(root / "playbooks" / "check.yml", inventory, project_dir=root, limit=limit,
                              on_event=collector)
    return build_document(hosts, collector, result.failures)


class CheckCollector:
    """Keeps the judge step's result (the ncclkit_check fact) and which hosts could not be reached."""

    def __init__(self):
        self.check = None
        self.unreachable: dict[str, str] = {}

    def __call__(self, event: dict) -> None:
        data = event.get("event_data", {})
        if event.get("event") == "runner_on_unreachable":
            self.unreachable[data.get("host")] = str(data.get("res", {}).get("msg", "")).strip()
        elif event.get("event") == "runner_on_ok" and str(data.get("task_action", "")).endswith("set_fact"):
            check = (data.get("res", {}).get("ansible_facts") or {}).get("ncclkit_check")
            if check:
                self.check = check


# Play failures whose message names a check finding's code: the NIC choice stops the play before the
# judge runs, and its reason (a host's cluster NIC down) is a finding like the judge's.
FAILURE_CODES = {
    "cluster_nic_down": "bring the NIC up on that host (ip link set NIC up) and find why it went down",
}


def failure_findings(hosts: list[str], failures: list[dict]) -> list[dict]:
    """The findings that the play's failures name ("... (cluster_nic_down) ..."): the host is the first
    cluster host the message names, else the host the task failed on."""
    found = []
    for failure in failures:
        message = str(failure.get("msg", ""))
        for code, fix in FAILURE_CODES.items():
            if f"({code})" not in message:
                continue
            named = [(match.start(), h) for h in hosts
                     if (match := re.search(rf"(?<![\w.-]){re.escape(h)}(?![\w-])", message))]
            host = min(named)[1] if named else failure.get("host")
            if any(item["code"] == code and item["host"] == host for item in found):
                continue  # every host's play stops on the same reason
            found.append({"code": code, "severity": "error", "host": host, "rank": None, "cause": message.strip(),
                          "fix": fix, "evidence": [f"{failure.get('task')}: {message.strip()}"],
                          "consequence_of": None})
    return found


def build_document(hosts: list[str], collector: CheckCollector, failures: list[dict]) -> dict:
    check = collector.check
    failed = [f for f in failures if f["host"] not in collector.unreachable]
    if collector.unreachable:
        names = ", ".join(sorted(collector.unreachable))
        verdict = f"NOT CHECKED: {len(collector.unreachable)} host(s) unreachable: {names}"
    elif check is None:
        first = failed[0] if failed else {"host": "?", "task": "?", "msg": "the play ended before its check step"}
        verdict = f"NOT CHECKED: {first['host']}: {first['task']}: {first['msg']}"
    elif check["ready"]:
        verdict = "READY: multi-node training should start here"
    else:
        errors = [f for f in check["findings"] if f["severity"] == "error"]
        verdict = f"NOT READY: {len(errors)} error(s); first: {errors[0]['code']}: {errors[0]['cause']}"
    return {
        "verdict": verdict, "ready": bool(check and check["ready"] and not collector.unreachable),
        "verdicts": (check or {}).get("verdicts", {}),
        "findings": check["findings"] if check is not None else failure_findings(hosts, failed),
        "master": (check or {}).get("master", {}), "unreachable": collector.unreachable,
        "failures": failed, "hosts": hosts, "check": check is not None,
    }


def print_human(document: dict) -> None:
    for host in document["hosts"]:
        line = document["verdicts"].get(host) or (
            f"{host}: UNREACHABLE: {document['unreachable'][host]}" if host in document["unreachable"]
            else f"{host}: not checked")
        print(line)
    for item in document["findings"]:
        where = item["host"] or "cluster"
        print(f"\n[{item['severity']}] {item['code']} ({where}): {item['cause']}")
        print(f"  fix: {item['fix']}")
        for line in item["evidence"][:4]:
            print(f"  evidence: {line}")
    print(f"\n{document['verdict']}")
