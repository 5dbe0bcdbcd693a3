"""What `ncclkit run` shows while a play runs: one line per host (its current task and counters),
live with rich on a terminal, one plain line per event otherwise; and the recap table at the end."""

from __future__ import annotations

import sys
from dataclasses import dataclass

# The recap's columns: ansible-playbook's PLAY RECAP names and the stats keys they come from.
RECAP_COLUMNS = (("ok", "ok"), ("changed", "changed"), ("unreachable", "dark"), ("failed", "failures"),
                 ("skipped", "skipped"), ("rescued", "rescued"), ("ignored", "ignored"))


@dataclass
class HostProgress:
    task: str = ""
    ok: int = 0
    changed: int = 0
    failed: int = 0
    unreachable: int = 0
    skipped: int = 0

    def counters(self) -> str:
        return f"ok={self.ok} changed={self.changed} failed={self.failed} unreachable={self.unreachable}"

    def as_dict(self) -> dict:
        return {"ok": self.ok, "changed": self.changed, "failed": self.failed,
                "unreachable": self.unreachable, "skipped": self.skipped}


class ProgressTracker:
    """Follows ansible-runner's events: each host's task and counters, the report folders the
    play wrote (nccl_report), and the summary lines it printed (debug messages)."""

    def __init__(self):
        self.hosts: dict[str, HostProgress] = {}
        self.play = ""
        self.tasks_started = 0
        self.reports: list[str] = []

    def __call__(self, event: dict) -> None:
        kind = event.get("event")
        data = event.get("event_data", {})
        host = data.get("host")
        if kind == "playbook_on_play_start":
            self.play = data.get("play", "")
            self.on_play(self.play)
        elif kind == "playbook_on_task_start":
            self.tasks_started += 1
            self.on_task(data.get("task", ""))
        elif kind == "runner_on_start" and host:
            self.hosts.setdefault(host, HostProgress()).task = data.get("task", "")
            self.on_host(host, None, "")
        elif str(kind).startswith("runner_on_") and host:
            self._count(host, kind, data)

    def _count(self, host: str, kind: str, data: dict) -> None:
        progress = self.hosts.setdefault(host, HostProgress())
        progress.task = data.get("task", progress.task)
        res = data.get("res") or {}
        message = str(res.get("msg", "")).strip() if isinstance(res, dict) else ""
        if kind == "runner_on_ok":
            progress.ok += 1
            changed = bool(res.get("changed"))
            progress.changed += changed
            status = "changed" if changed else "ok"
            action = str(data.get("task_action", ""))
            if action.endswith("nccl_report") and res.get("path") and res["path"] not in self.reports:
                self.reports.append(res["path"])
            message = message if action in ("debug", "ansible.builtin.debug") else ""
        elif kind == "runner_on_failed" and data.get("ignore_errors"):
            status, message = "ignored", ""
        elif kind == "runner_on_failed":
            progress.failed += 1
            status = "failed"
        elif kind == "runner_on_unreachable":
            progress.unreachable += 1
            status = "unreachable"
        elif kind == "runner_on_skipped":
            progress.skipped += 1
            status, message = "skipped", ""
        else:
            return
        self.on_host(host, status, message)

    # What a display does with them.
    def on_play(self, play: str) -> None: ...
    def on_task(self, task: str) -> None: ...
    def on_host(self, host: str, status: str | None, message: str) -> None: ...
    def finish(self, stats: dict) -> None: ...


class PlainProgress(ProgressTracker):
    """One line per event, for logs and pipes: a play, a task, a host's result with its counters."""

    def __init__(self, stream=None):
        super().__init__()
        self.stream = stream or sys.stdout

    def _print(self, line: str) -> None:
        print(line, file=self.stream, flush=True)

    def on_play(self, play):
        self._print(f"== {play}")

    def on_task(self, task):
        self._print(f"  [{self.tasks_started}] {task}")

    def on_host(self, host, status, message):
        if status is None:
            return
        progress = self.hosts[host]
        line = f"    {host}: {status} ({progress.counters()})"
        self._print(f"{line}: {message}" if message and status in ("failed", "unreachable") else line)
        if message and status in ("ok", "changed"):
            self._print(f"      {message}")

    def finish(self, stats):
        rows = recap_rows(stats)
        if not rows:
            return
        header = ["host", *(name for name, dummy in RECAP_COLUMNS)]
        table = [header, *([host, *(str(counts[name]) for name, dummy in RECAP_COLUMNS)] for host, counts in rows)]
        widths = [max(len(row[i]) for row in table) for i in range(len(header))]
        self._print("RECAP")
        for row in table:
            numbers = (cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True))
            cells = [row[0].ljust(widths[0]), *numbers]
            self._print("  " + "  ".join(cells).rstrip())


class RichProgress(ProgressTracker):
    """A live table on a terminal: one row per host with its current task and counters."""

    def __init__(self, console=None):
        super().__init__()
        from rich.console import Console
        from rich.live import Live

        self.console = console or Console()
        self.live = Live(self._table(), console=self.console, refresh_per_second=8, transient=True)
        self.live.start()

    def _table(self):
        from rich.table import Table

        table = Table(title=self.play or None, title_justify="left", expand=False)
        table.add_column("host", style="bold")
        table.add_column("task", overflow="ellipsis", max_width=60)
        for name, style in (("ok", "green"), ("changed", "yellow"), ("failed", "red"), ("unreachable", "magenta")):
            table.add_column(name, justify="right", style=style)
        for host, progress in self.hosts.items():
            table.add_row(host, progress.task, str(progress.ok), str(progress.changed), str(progress.failed),
                          str(progress.unreachable))
        return table

    def on_play(self, play):
        self.live.console.print(f"[bold]== {play}[/bold]", highlight=False)
        self.live.update(self._table())

    def on_host(self, host, status, message):
        from rich.markup import escape

        if status in ("failed", "unreachable"):
            self.live.console.print(f"[red]{escape(host)}: {status}[/red]: {escape(message)}", highlight=False)
        elif message:
            self.live.console.print(f"  {escape(message)}", highlight=False)
        self.live.update(self._table())

    def finish(self, stats):
        from rich.table import Table

        self.live.stop()
        rows = recap_rows(stats)
        if not rows:
            return
        table = Table(title="RECAP", title_justify="left")
        table.add_column("host", style="bold")
        for name, dummy in RECAP_COLUMNS:
            table.add_column(name, justify="right")
        for host, counts in rows:
            color = "red" if counts["failed"] or counts["unreachable"] else "yellow" if counts["changed"] else "green"
            table.add_row(f"[{color}]{host}[/{color}]", *(str(counts[name]) for name, dummy in RECAP_COLUMNS))
        self.console.print(table)


def recap_rows(stats: dict) -> list[tuple[str, dict[str, int]]]:
    """(host, {recap column: count}) for every host in ansible's final stats, by name."""
    hosts = sorted({host for key in dict(RECAP_COLUMNS).values() for host in stats.get(key, {})})
    return [(host, {name: stats.get(key, {}).get(host, 0) for name, key in RECAP_COLUMNS}) for host in hosts]


def make_progress(stream, tty: bool) -> ProgressTracker:
    return RichProgress() if tty else PlainProgress(stream)
