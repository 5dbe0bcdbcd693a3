"""How far a job got: the stages whose start a log shows, and whether their end is shown too.

Pure Python 3.8+ standard library. diagnosis.log feeds every line to Stages.add(); a stage that
started and never ended is a run that hung or was killed (`incomplete_run`), never a healthy one:

- nccl-tests: its header ("# nThread ..."), the table ("#  size  count ..." then rows) and the
  footer ("# Avg bus bandwidth"); several runs in one file are several stages;
- NCCL init: "comm 0x... - Init START" without that communicator's "Init COMPLETE";
- a Lightning fit: the distributed start, the model summary or "Epoch N:" progress, without
  "`Trainer.fit` stopped";
- a torch.distributed job (torchrun, NCCL's init) has no end marker of its own: whether it finished
  cannot be told, unless torchrun's agent said its worker group finished.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional

_COMM = re.compile(r"\bcomm (?P<comm>0x[0-9a-fA-F]+)")
# tqdm's bar: "| 871/2352 [3:40:43<6:15:11, 15.20s/it]"
_PROGRESS = re.compile(r"\| *(?P<done>\d+)/(?P<total>\d+) \[[\d:]+<[\d:?]+, *[\d.?]+ *(?:s/it|it/s)\]")
# A communicator's START and COMPLETE lines name the same rank and commId (and, from NCCL, the same
# pointer): the rank and commId pair them even where a copy of the log changed the pointer.
_COMM_ID = re.compile(r"\brank (?P<rank>\d+) n[Rr]anks \d+.*\bcommId (?P<id>0x[0-9a-fA-F]+)")
_ROW = re.compile(r"^\s*(?P<size>\d+)\s+\d+\s+\w+\s")
_LIGHTNING_START = ("Initializing distributed: GLOBAL_RANK", "| Name ", "Sanity Checking", "LOCAL_RANK: ")
_LIGHTNING_END = ("`Trainer.fit` stopped", "Trainer.fit stopped")
# Of those, the ones that say it ended well (a worker group that finished after a restart, a trainer's end).
_SUCCESS = ("successfully finished", "Training completed", "training completed", "exits successfully",
            "Job completed successfully",  # submitit's, in every task's log
            "' succeeded")  # Ray's job end
# torchrun's agent and launchers that say the job ended (successfully or not).
_JOB_END = ("Local worker group finished", "Done waiting for other agents", "worker group successfully finished",
            "Training completed", "training completed", "Training finished", "training finished",
            "exits successfully",  # DeepSpeed's launcher: "Process 7001 exits successfully."
            "Job completed successfully",  # submitit
            "Shutting down background thread",  # Horovod, at hvd.shutdown()
            "' succeeded")  # `ray job submit`: "Job 'raysubmit_X' succeeded"
# Launchers that start a torch.distributed job without NCCL lines of their own.
_LAUNCHER_START = ("in DeepSpeed with backend", "Starting elastic_operator", "horovod/common")


# Every substring Stages.add() looks for in a line that is not NCCL's own (besides "#" lines and the
# rows of an open nccl-tests table).
# ("Epoch N:" alone does not start a fit here: Lightning's start lines come first.)
MARKERS = _LIGHTNING_START + _LIGHTNING_END + _JOB_END + _LAUNCHER_START + (
    "GLOBAL_RANK", "Trainer.fit", "inished", "ompleted", "Done waiting", "exits successfully", "Shutting down",
    "' succeeded")


def _bar(kept: tuple) -> Optional[dict]:
    """{done, total, origin} of a kept progress-bar line whose last bar is tqdm's, else None."""
    line, source = kept
    bars = list(_PROGRESS.finditer(line.text))
    if not bars:
        return None
    last = bars[-1]
    return {"done": int(last["done"]), "total": int(last["total"]),
            "origin": {"evidence": last.group(0).strip()[:200], "source": source, "line": line.number, "time": None}}


class Stages:
    """Stage starts and ends, in the order the lines showed them."""

    def __init__(self):
        self.tests: Optional[dict] = None   # the nccl-tests run being read: {origin, header, rows, last_size}
        self.tests_done = 0
        self.tests_cut: List[dict] = []      # runs that a later header started before their footer
        self.comms: Dict[str, dict] = {}     # communicators with Init START and no COMPLETE yet: comm -> origin
        self.comms_done = 0
        self.fit: Optional[dict] = None      # origin of the first Lightning fit line
        self.fit_done = False
        self.job_end = False
        self.success: Dict[str, dict] = {}  # file -> origin of its last line saying the work finished well
        self.progress: Dict[str, tuple] = {}  # file -> its last progress bar line: (line, origin)
        self.torch = False                   # an NCCL line or torchrun's [rankN]: label was seen
        self.recognised = 0                  # lines that belong to any stage
        self.last: Optional[dict] = None     # origin of the log's last line (where it ends)

    def add(self, line, origin) -> None:
        text = line.text
        if line.level:
            self.torch = True
            if "Init START" in text or "Init COMPLETE" in text:
                ident = _COMM_ID.search(line.msg)
                match = _COMM.search(line.msg)
                comm = (f"{line.host}/{ident.group('rank')}/{ident.group('id')}" if ident
                        else f"{line.host}/{match.group('comm')}" if match else None)
                if "Init START" in text:
                    if comm and comm not in self.comms:
                        self.comms[comm] = origin()
                elif comm:
                    self.comms_done += 1
                    self.comms.pop(comm, None)
            return
        if not self.torch and line.label and line.label.startswith("rank"):
            self.torch = True
        if text[:1] == "#" or self.tests is not None:
            self._tests(text, origin)
        if self.fit is None and ("Epoch " in text or "GLOBAL_RANK" in text or "| Name " in text
                                 or "Sanity Checking" in text or "LOCAL_RANK: " in text):
            if any(marker in text for marker in _LIGHTNING_START) or re.search(r"\bEpoch \d+:", text):
                self.fit = origin()
                self.recognised += 1
        if "Trainer.fit" in text and any(marker in text for marker in _LIGHTNING_END):
            self.fit_done = True
            self.recognised += 1
            if "reached" in text:  # "`Trainer.fit` stopped: `max_epochs=3` reached."
                self._succeeded(origin())
        if ("inished" in text or "ompleted" in text or "Done waiting" in text or "exits successfully" in text
                or "Shutting down" in text or "' succeeded" in text) \
                and any(marker in text for marker in _JOB_END):
            self.job_end = True
            self.recognised += 1
            if any(marker in text for marker in _SUCCESS):
                self._succeeded(origin())
        if not self.torch and any(marker in text for marker in _LAUNCHER_START):
            self.torch = True
            self.recognised += 1

    def progress_line(self, source: str, line) -> None:
        """Keep a file's last progress-bar line (read once, by unfinished(): bars are many)."""
        self.progress[source] = (line, source)

    def _succeeded(self, where: dict) -> None:
        self.success[where.get("source")] = where

    def _tests(self, text: str, origin) -> None:
        stripped = text.lstrip()
        if stripped.startswith("#"):
            body = stripped.lstrip("#").strip()
            if body.startswith("nThread") or body.startswith("Using devices"):
                if self.tests is not None and self.tests["rows"] and body.startswith("nThread"):
                    self.tests_cut.append(self.tests)
                if self.tests is None or body.startswith("nThread"):
                    self.tests = {"origin": origin(), "header": False, "rows": 0, "last_size": None}
                self.recognised += 1
            elif self.tests is not None and (body.startswith("size") or body.startswith("out-of-place")
                                             or body.startswith("(B)")):
                self.tests["header"] = True
            elif self.tests is not None and body.startswith("Avg bus bandwidth"):
                self.tests = None
                self.tests_done += 1
                self.recognised += 1
            return
        if self.tests is not None and self.tests["header"] and stripped[:1].isdigit():
            match = _ROW.match(text)
            if match:
                self.tests["rows"] += 1
                self.tests["last_size"] = int(match.group("size"))
                self.tests["last_origin"] = origin()

    def unfinished(self, init_done: bool = False) -> Optional[dict]:
        """{stage, origin, what} for the last stage that started and never ended, else None.

        init_done: whether NCCL finished init somewhere (an nccl-tests header alone may be an excerpt).
        """
        run = self.tests or (self.tests_cut[-1] if self.tests_cut else None)
        if run is not None and (run["header"] or run["rows"] or init_done):
            if run["rows"]:
                what = (f"nccl-tests printed {run['rows']} result row(s), the last for {run['last_size']} bytes, "
                        "and then stopped: no 'Avg bus bandwidth' footer")
                return {"stage": "nccl-tests rows", "origin": run.get("last_origin") or run["origin"], "what": what}
            if run["header"]:
                return {"stage": "nccl-tests table", "origin": run["origin"],
                        "what": "nccl-tests printed its table header and no result row"}
            return {"stage": "nccl-tests start, NCCL init done", "origin": run["origin"],
                    "what": "nccl-tests started and NCCL finished init, but no result table followed"}
        if self.comms:
            comm, origin = next(iter(self.comms.items()))
            return {"stage": "NCCL init", "origin": origin,
                    "what": f"NCCL init of {len(self.comms)} communicator(s) started (Init START, first: "
                            f"{comm.split('/', 1)[-1]}) and never completed (no Init COMPLETE)"}
        if self.fit is not None and not self.fit_done:
            return {"stage": "Lightning fit", "origin": self.fit,
                    "what": "Lightning's fit started and never printed '`Trainer.fit` stopped'"}
        stopped = [shown for shown in map(_bar, self.progress.values()) if shown and shown["done"] < shown["total"]]
        if stopped and init_done and not self.finished():
            shown = stopped[0]
            return {"stage": "training progress", "origin": shown["origin"],
                    "what": f"its progress bar stopped at {shown['done']} of {shown['total']} and the log ends there"}
        return None

    def finished(self) -> bool:
        """Whether the log shows an end marker of the work it started."""
        return bool(self.tests_done or self.fit_done or self.job_end)

    def started(self) -> bool:
        return bool(self.tests is not None or self.tests_done or self.tests_cut or self.comms or self.comms_done
                    or self.fit is not None)
