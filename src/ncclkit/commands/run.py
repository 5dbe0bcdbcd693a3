"""`ncclkit run`: a playbook (site.yml by default) through ansible-runner, with ansible-playbook's
own options passed through, progress per host, a recap, the run's log kept and --json for CI."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

from ncclkit import exitcodes
from ncclkit.paths import collection_root, site_playbook
from ncclkit.progress import PlainProgress, make_progress, recap_rows

LOG_NAME = "ansible-run.log"
# Where nccl_validate puts its reports (nccl_validate_report_parent's default), relative to here.
REPORT_PARENT = "ncclkit-report"
ANSIBLE_ERROR = re.compile(r"^(?:\[ERROR\]:|ERROR!)\s*(.*)")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run", help="run site.yml (or another playbook) on an inventory",
        description="Runs a playbook through ansible-runner: ansible-playbook's options below are passed "
                    "through; the run's log is kept in ncclkit-report/.")
    parser.add_argument("-i", "--inventory", default="inventories/lab",
                        help="inventory file or folder (default: inventories/lab)")
    parser.add_argument("--playbook", help="a playbook file, or the name of one of the collection's playbooks "
                                           "(check, preflight, site); default: site.yml")
    parser.add_argument("-l", "--limit", help="run on these hosts or groups only (ansible's pattern)")
    parser.add_argument("-C", "--check", action="store_true", help="change nothing, show what would change")
    parser.add_argument("-D", "--diff", action="store_true", help="show the changes made to files")
    parser.add_argument("-t", "--tags", action="append", default=[], help="run only tasks with these tags")
    parser.add_argument("--skip-tags", action="append", default=[], help="skip tasks with these tags")
    parser.add_argument("-e", "--extra-vars", dest="extra_vars", action="append", default=[],
                        metavar="VARS", help="NAME=VALUE [NAME=VALUE ...], a JSON/YAML mapping, or @FILE "
                                             "(repeatable, as ansible-playbook's -e)")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more of ansible's output (up to -vvvvv)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON document (hosts, failures, unreachable, rc, log); progress goes to stderr")
    parser.set_defaults(handler=run_command)


class BadInput(Exception):
    """One line naming the cause and the fix; `code` is the exit code."""

    def __init__(self, message, code=exitcodes.BAD_INPUT):
        super().__init__(message)
        self.code = code


def run_command(args: argparse.Namespace) -> int:
    try:
        root = collection_root()
        playbook = resolve_playbook(args.playbook, root)
        extra_args, extravars = parse_extra_vars(args.extra_vars)
        from ncclkit.inventory import InventoryError, limited_hosts

        try:
            limited_hosts(Path(args.inventory), args.limit)
        except InventoryError as error:
            raise BadInput(str(error)) from None
    except BadInput as error:
        print(f"ncclkit run: {error}", file=sys.stderr)
        return error.code
    from ncclkit.runner import run_playbook  # ansible-runner is slow to import

    progress = PlainProgress(sys.stderr) if args.json else make_progress(sys.stdout, sys.stdout.isatty())
    log = RunLog(Path(extravars.get("ncclkit_report_parent") or REPORT_PARENT), progress.reports)
    try:
        result = run_playbook(
            playbook, args.inventory, project_dir=root, extra_args=extra_args, check=args.check, diff=args.diff,
            limit=args.limit, tags=_split(args.tags), skip_tags=_split(args.skip_tags), verbosity=args.verbose,
            on_event=progress, keep_log=log.keep)
    except KeyboardInterrupt:
        progress.finish({})
        kept = f"; the log so far: {log.path}" if log.path else ""
        print(f"ncclkit run: interrupted{kept}", file=sys.stderr)
        return exitcodes.INTERRUPTED
    progress.finish(result.stats)
    code = exit_code(result.rc, result.unreachable)
    if result.rc == 4 and not result.stats and not result.unreachable:
        # ansible-playbook's 4 without a play run: the playbook or an -e file did not parse.
        print(f"ncclkit run: {playbook}: {ansible_error(log.path)}", file=sys.stderr)
        log.discard()
        return exitcodes.BAD_INPUT
    if args.json:
        print(json.dumps(run_document(result, code, progress, log.path), indent=2))
        return code
    for failure in result.failures:
        print(f"FAILED {failure['host']}: {failure['task']}: {failure['msg']}")
    for report in progress.reports:
        plot_written_report(report)
    print(f"ncclkit run: {result.status} (rc {code}); log: {log.path}")
    return code


def exit_code(playbook_rc: int, unreachable: dict | None = None) -> int:
    """ansible-playbook's code in the shared table: an unreachable host is 4 (ansible-playbook's 4
    alone, without one, was a playbook that did not parse: 3), any other failure is 1."""
    if playbook_rc == 0:
        return exitcodes.OK
    if unreachable or (unreachable is None and playbook_rc == 4):
        return exitcodes.UNREACHABLE
    return exitcodes.PROBLEM


def resolve_playbook(name: str | None, root: Path) -> Path:
    """A playbook file, or a name of one in the collection's playbooks/ (check, playbooks/check.yml)."""
    if not name:
        return site_playbook(root)
    path = Path(name)
    if path.is_file():
        return path
    if "/" not in name and not path.suffix:
        for candidate in (root / "playbooks" / f"{name}.yml", root / f"{name}.yml"):
            if candidate.is_file():
                return candidate
    known = ", ".join(sorted(p.stem for p in (root / "playbooks").glob("*.yml")))
    raise BadInput(f"playbook {name} does not exist: give a playbook file or one of the collection's ({known})")


def parse_extra_vars(values: list[str]) -> tuple[list[str], dict]:
    """ansible-playbook's -e values, checked here, with @FILE made absolute (ansible-playbook starts in
    the collection's folder); and the variables they set, merged in order."""
    from ansible.errors import AnsibleError
    from ansible.parsing.dataloader import DataLoader
    from ansible.parsing.splitter import parse_kv

    loader, passed, merged = DataLoader(), [], {}
    for value in values:
        try:
            if value.startswith("@"):
                path = Path(value[1:]).expanduser()
                if not path.is_file():
                    raise BadInput(f"extra-vars file {value[1:]} does not exist: give -e @FILE a YAML or JSON file")
                data, value = loader.load_from_file(str(path)), f"@{path.resolve()}"
            elif value.lstrip()[:1] in ("{", "["):
                data = loader.load(value)
            else:
                data = parse_kv(value)
                if not data or "_raw_params" in data:
                    raise BadInput(f"extra variable {value!r} is not NAME=VALUE", exitcodes.USAGE)
        except AnsibleError as error:
            first = str(error).strip().splitlines()[0]
            raise BadInput(f"extra variables {value!r} do not parse: {first}") from None
        if not isinstance(data, dict):
            raise BadInput(f"extra variables {value!r} are not a mapping of names to values")
        passed.append(value)
        merged.update(data)
    return passed, merged


class RunLog:
    """ansible-playbook's output of the run, kept in the report folder the play wrote, else in a run
    folder of its own (owner-only, as the reports) in the report parent."""

    def __init__(self, parent: Path, reports: list[str]):
        self.parent = parent
        self.reports = reports  # filled while the play runs
        self.path: Path | None = None
        self.made: Path | None = None  # the run folder made here, if the play wrote no report

    def keep(self, stdout: Path) -> None:
        folder = Path(self.reports[-1]) if self.reports else self._run_folder()
        self.path = folder / LOG_NAME
        descriptor = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "wb") as target, open(stdout, "rb") as source:
            shutil.copyfileobj(source, target)

    def discard(self) -> None:
        """Remove the log and the run folder made for it (a run that never started keeps none)."""
        if self.path:
            self.path.unlink(missing_ok=True)
        if self.made:
            self.made.rmdir()
        self.path = self.made = None

    def _run_folder(self) -> Path:
        self.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        stamp = "run-" + time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        for number in range(1, 1000):
            folder = self.parent / (stamp if number == 1 else f"{stamp}-{number}")
            try:
                folder.mkdir(mode=0o700)
                self.made = folder.resolve()
                return self.made
            except FileExistsError:
                continue
        raise FileExistsError(f"no free run folder name in {self.parent}")


def ansible_error(log: Path | None) -> str:
    """ansible-playbook's error line (and where it points) from the log."""
    lines = log.read_text(errors="replace").splitlines() if log and log.is_file() else []
    for number, line in enumerate(lines):
        found = ANSIBLE_ERROR.match(line.strip())
        if found:
            origin = next((rest.strip()[len("Origin:"):].strip() for rest in lines[number + 1:number + 3]
                           if rest.strip().startswith("Origin:")), "")
            return found.group(1) + (f" ({origin})" if origin else "")
    return "ansible-playbook could not start the play"


def run_document(result, code: int, progress, log: Path | None) -> dict:
    """The --json document: one object a CI job can read."""
    hosts = {host: state.as_dict() for host, state in progress.hosts.items()}
    for host, counts in recap_rows(result.stats):  # ansible's final counts win over the live ones
        hosts[host] = {**hosts.get(host, {}), **counts}
    return {
        "rc": code, "status": result.status, "ansible_rc": result.rc, "hosts": hosts,
        "failures": [f for f in result.failures if f["host"] not in result.unreachable],
        "unreachable": result.unreachable, "reports": progress.reports, "log": str(log) if log else None,
    }


def plot_written_report(report_dir: str) -> None:
    """The bandwidth plot beside a report the run wrote; a report without rows gets none."""
    from ncclkit.commands.report import PlotError, write_plot

    try:
        print(f"report: {report_dir} (plot: {write_plot(report_dir)})")
    except PlotError as error:
        print(f"report: {report_dir} (no plot: {error})")


def _split(values: list[str]) -> list[str]:
    return [tag.strip() for value in values for tag in value.split(",") if tag.strip()]
