"""Read NCCL's RAS report (NCCL 2.24+, `ncclras` or a client on port 28028) for the ranks it names
as problems: missing, unresponsive or dead.

Pure Python 3.8+ standard library.

- RasText: the plain-text VERBOSE STATUS, line by line. In its "Errors" and "Warnings" sections each
  problem is a heading ("Missing communicator data from 1 rank") followed by the ranks it concerns
  ("Rank 1 -- GPU 0 managed by process 482 on node 127.0.0.1"); an operation-count MISMATCH names
  the ranks out of step ("Rank 19 has launched up to operation 1008 -- GPU 3 ...").
- parse_ras_json(text): the JSON form (SET FORMAT json). NCCL 2.28.9 writes it with a comma missing
  after "nvml_dev" in missing_ranks, so a missing comma between a value and the next key is put
  back before reading; RasFormatError (only) when it still does not parse.
RAS names hosts by their bootstrap address, not their hostname.
"""

from __future__ import annotations

import json
import re
from typing import List

# "Rank 1 -- GPU 0 managed by ...", and under an operation-count MISMATCH the rank out of step:
# "Rank 19 has launched up to operation 1008 -- GPU 3 managed by process 40127 on node 10.20.0.13".
_RAS_RANK = re.compile(r"^\s*Rank (?P<rank>\d+)(?P<progress> has \w+ up to operation \d+)? -- GPU (?P<gpu>\d+) "
                       r"managed by process (?P<pid>\d+) on node (?P<node>\S+)")
_SECTION = ("Errors", "Warnings")
_CLIENT_START = " compiled with CUDA "
# A value (number, string, literal, closing bracket) at a line end, the next line opening a key.
_MISSING_COMMA = re.compile(r'([0-9"\]}]|true|false|null)([ \t]*\r?\n[ \t]*")')


class RasFormatError(ValueError):
    """The RAS JSON cannot be read even after the known repair; the message says why."""


class RasText:
    """Collects the problem ranks of RAS text reports seen among a log's lines."""

    def __init__(self):
        self.problems: List[dict] = []  # {rank, pid, node, gpu, reason}
        self.seen = False
        self._section = False
        self._heading = ""
        self._previous = ""

    def add(self, text: str, origin=None) -> None:
        """origin: a callable giving {evidence, source, line} for the line, kept for problem ranks."""
        if not self.seen and "SERVER PROTOCOL" not in text and _CLIENT_START not in text:
            return
        stripped = text.strip()
        # A report starts with the protocol line (a raw client) or, from the `ncclras` client, with
        # "NCCL version 2.28.9 compiled with CUDA 13.0" (NCCL's own lines say "NCCL version 2.28.9+cuda13.0").
        if stripped.startswith("SERVER PROTOCOL") or (stripped.startswith("NCCL version") and _CLIENT_START in stripped):
            self.seen, self._section = True, False
        elif not self.seen:
            return
        if stripped and set(stripped) == {"="}:
            self._section = self._previous in _SECTION
        elif self._section and stripped:
            match = _RAS_RANK.match(stripped)
            if match:
                reason = (f"rank {match.group('rank')}{match.group('progress')} while {self._heading}"
                          if match.group("progress") else self._heading)
                self.problems.append({"rank": int(match.group("rank")), "pid": match.group("pid"),
                                      "node": match.group("node"), "gpu": int(match.group("gpu")),
                                      "reason": reason, "origin": origin() if origin else None})
            elif not stripped.startswith("#") and not stripped.startswith("Process "):
                self._heading = stripped[:200]
        self._previous = stripped

    def finish(self) -> None:
        self._section = False


def json_start(text: str) -> int:
    """Where the JSON document starts: after the protocol lines ("SERVER PROTOCOL 2", "OK"), or -1."""
    if text.lstrip().startswith("{"):
        return len(text) - len(text.lstrip())
    index = text.find("\n{")
    return index + 1 if index >= 0 else -1


def parse_ras_json(text: str) -> List[dict]:
    """The missing or unresponsive ranks a RAS JSON report names: [{rank, pid, node, gpu, reason}]."""
    start = json_start(text)
    text = text[start:] if start >= 0 else text
    try:
        document = json.loads(text)
    except ValueError:
        try:
            document = json.loads(_MISSING_COMMA.sub(r"\1,\2", text))
        except ValueError as error:
            raise RasFormatError(f"not a RAS JSON report even after adding missing commas: {error}") from None
    if not isinstance(document, dict) or not isinstance(document.get("communicators"), list):
        raise RasFormatError("not a RAS JSON report: no 'communicators' list")
    problems = []
    for comm in document["communicators"]:
        if not isinstance(comm, dict):
            continue
        for item in comm.get("missing_ranks") or []:
            if not isinstance(item, dict) or not isinstance(item.get("rank"), int):
                continue
            status = item.get("status") if isinstance(item.get("status"), dict) else {}
            reason = ("considered dead" if status.get("considered_dead") else
                      "unresponsive" if status.get("unresponsive") else "missing communicator data")
            problems.append({"rank": item["rank"], "pid": str(item.get("pid", "?")),
                             "node": str(item.get("host", "?")), "gpu": item.get("cuda_dev"),
                             "reason": f"RAS: {reason}"})
    return problems
