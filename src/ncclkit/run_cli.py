"""`ncclkit run`: site.yml through ansible-runner, with progress on the terminal."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ncclkit import exitcodes
from ncclkit.paths import collection_root, site_playbook


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("run", help="run site.yml (or another playbook) on an inventory")
    parser.add_argument("-i", "--inventory", default="inventories/lab",
                        help="inventory file or folder (default: inventories/lab)")
    parser.add_argument("--playbook", help="playbook to run (default: the collection's site.yml)")
    parser.add_argument("--check", action="store_true", help="change nothing, show what would change")
    parser.add_argument("--tags", default="", help="comma-separated tags to run")
    parser.add_argument("-e", "--extra-var", action="append", default=[], metavar="NAME=VALUE",
                        help="extra variable (repeatable)")
    parser.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace) -> int:
    from ncclkit.runner import run_playbook  # ansible-runner is slow to import

    root = collection_root()
    inventory = Path(args.inventory)
    if not inventory.exists():
        print(f"ncclkit run: inventory {inventory} does not exist "
              f"(for the lab: run 'ncclkit lab up' first)", file=sys.stderr)
        return exitcodes.BAD_INPUT
    try:
        extravars = dict(_split_assignment(item) for item in args.extra_var)
    except ValueError as error:
        print(f"ncclkit run: {error}", file=sys.stderr)
        return exitcodes.USAGE
    playbook = Path(args.playbook) if args.playbook else site_playbook(root)
    if not playbook.is_file():
        print(f"ncclkit run: playbook {playbook} does not exist: give a playbook file, or leave --playbook "
              "out for site.yml", file=sys.stderr)
        return exitcodes.BAD_INPUT
    printer = ProgressPrinter()
    result = run_playbook(playbook, inventory, project_dir=root, extravars=extravars,
                          check=args.check, tags=[t for t in args.tags.split(",") if t],
                          on_event=printer)
    for failure in result.failures:
        print(f"FAILED {failure['host']}: {failure['task']}: {failure['msg']}")
    for report in printer.reports:
        plot_written_report(report)
    print(f"ncclkit run: {result.status} (rc {result.rc})")
    return exit_code(result.rc)


def exit_code(playbook_rc: int) -> int:
    """ansible-playbook's code in the shared table: 4 (unreachable) stays, any other failure is 1."""
    if playbook_rc == 0:
        return exitcodes.OK
    return exitcodes.UNREACHABLE if playbook_rc == 4 else exitcodes.PROBLEM


def plot_written_report(report_dir: str) -> None:
    """The bandwidth plot beside a report the run wrote; a report without rows gets none."""
    from ncclkit.report_cli import PlotError, write_plot

    try:
        print(f"report: {report_dir} (plot: {write_plot(report_dir)})")
    except PlotError as error:
        print(f"report: {report_dir} (no plot: {error})")


def _split_assignment(item: str) -> tuple[str, str]:
    name, sep, value = item.partition("=")
    if not sep or not name:
        raise ValueError(f"extra variable {item!r} is not NAME=VALUE")
    return name, value


class ProgressPrinter:
    """One line per play and task, plus each host's summary lines (debug messages)."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stdout
        self.tasks_started = 0
        self.reports: list[str] = []  # report folders nccl_validate wrote, for the plot

    def __call__(self, event: dict) -> None:
        data = event.get("event_data", {})
        kind = event.get("event")
        if kind == "playbook_on_play_start":
            print(f"== {data.get('play', '')}", file=self.stream, flush=True)
        elif kind == "playbook_on_task_start":
            self.tasks_started += 1
            print(f"  [{self.tasks_started}] {data.get('task', '')}", file=self.stream, flush=True)
        elif kind == "runner_on_ok" and str(data.get("task_action", "")).endswith("nccl_report"):
            path = data.get("res", {}).get("path")
            if path and path not in self.reports:
                self.reports.append(path)
        elif kind == "runner_on_ok" and data.get("task_action") in ("debug", "ansible.builtin.debug"):
            message = data.get("res", {}).get("msg")
            if isinstance(message, str):
                print(f"      {message}", file=self.stream, flush=True)
        elif kind in ("runner_on_failed", "runner_on_unreachable") and not data.get("ignore_errors"):
            print(f"      {data.get('host')}: FAILED", file=self.stream, flush=True)
