"""`ncclkit launch -i INVENTORY [options] -- train.py ARGS...`: start the job on every host with its
own launcher, one merged live stream, a watch that names a stalled or failed rank, everything
stopped on failure; `--status RUN` / `--stop RUN` reach a job whose controller went away.
docs/launch.md describes it; exit codes from the one table (docs/cli.md)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ncclkit import exitcodes

REPORT_PARENT = "ncclkit-report"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "launch", help="start a training job on every host, watch it, stop it whole",
        description="Starts SCRIPT with every host's /opt/ncclkit/bin/ncclkit-torchrun (the inventory's cluster "
                    "group), merges the output, names a failed or stalled rank and stops every process of the job.")
    parser.add_argument("-i", "--inventory", help="inventory file or folder")
    parser.add_argument("-l", "--limit", help="only these hosts of the cluster group (ansible's pattern)")
    parser.add_argument("--nproc-per-node", type=int, help="ranks per host (default: the profile's, one per GPU)")
    parser.add_argument("--stall-after", type=float, default=60.0, metavar="S",
                        help="name a hang when no rank made progress for S seconds (default 60)")
    parser.add_argument("--stop-on-hang", action="store_true", help="stop the job when a hang is named")
    parser.add_argument("--timeout", type=float, metavar="T", help="stop the job after T seconds")
    parser.add_argument("--grace", type=float, default=10.0, metavar="S",
                        help="seconds between TERM and KILL when stopping (default 10)")
    parser.add_argument("--chdir", help="the job's working folder on the hosts (default: the login folder; "
                                        "this folder for ansible_connection local)")
    parser.add_argument("--no-check", action="store_true", help="skip the checks `ncclkit check` runs")
    parser.add_argument("--report-parent", default=REPORT_PARENT, help="where the run folder goes (ncclkit-report)")
    parser.add_argument("--json", action="store_true", help="print launch.json at the end (the stream goes to stderr)")
    parser.add_argument("--status", metavar="RUN", help="where the job of run folder RUN stands on every host")
    parser.add_argument("--stop", metavar="RUN", help="stop every process of the job of run folder RUN")
    parser.add_argument("command_argv", nargs="*", metavar="SCRIPT [ARG...]", help="after --: the training script")
    parser.set_defaults(handler=launch_command)


def launch_command(args: argparse.Namespace) -> int:
    if args.status or args.stop:
        return control_command(args)
    if not args.inventory:
        print("ncclkit launch: no inventory: give -i INVENTORY (or --status/--stop RUN)", file=sys.stderr)
        return exitcodes.BAD_INPUT
    from ncclkit.launch.session import LaunchInputError, launch

    out = sys.stderr if args.json else sys.stdout

    def echo(line: str) -> None:
        print(line, file=out, flush=True)

    try:
        document = launch(args.inventory, args.command_argv, limit=args.limit, nproc_per_node=args.nproc_per_node,
                          stall_after=args.stall_after, timeout=args.timeout, stop_on_hang=args.stop_on_hang,
                          check=not args.no_check, grace=args.grace, chdir=args.chdir,
                          report_parent=args.report_parent, echo=echo)
    except LaunchInputError as error:
        print(f"ncclkit launch: {error}", file=sys.stderr)
        return exitcodes.BAD_INPUT
    if args.json:
        print(json.dumps(document, indent=2, default=str))
        return document["exit_code"]
    for item in document["findings"]:
        where = ", ".join(str(x) for x in (item.get("host"), f"rank {item['rank']}" if item.get("rank") is not None
                                           else None) if x) or "cluster"
        print(f"[{item['severity']}] {item['code']} ({where}): {item['cause']}")
        print(f"  fix: {item['fix']}")
    print(f"run folder: {document['folder']}")
    print(document["verdict"])
    return document["exit_code"]


def control_command(args: argparse.Namespace) -> int:
    from ncclkit.launch.control import job_state

    try:
        state = job_state(args.stop or args.status, Path(args.report_parent), stop=bool(args.stop), grace=args.grace)
    except ValueError as error:
        print(f"ncclkit launch: {error}", file=sys.stderr)
        return exitcodes.BAD_INPUT
    if args.json:
        print(json.dumps(state, indent=2))
    else:
        for name, host in state["hosts"].items():
            if "error" in host:
                print(f"{name}: UNREACHABLE: {host['error']}")
                continue
            ended = f"launcher exited {host['rc']}" if host.get("rc") is not None else "launcher running"
            ranks = ", ".join(f"rank {r['rank']} pid {r['pid']} state {r['state']}" for r in host.get("ranks", []))
            count = len(host.get("pids") or [])
            print(f"{name}: {ended}; {count} process(es) of the job" + (f": {ranks}" if ranks else ""))
        print(f"{'stopped' if args.stop else 'status'}: {state['processes']} process(es) of the job left")
    if state["unreachable"]:
        return exitcodes.UNREACHABLE
    return exitcodes.PROBLEM if args.stop and state["processes"] else exitcodes.OK
