"""What a log file's name says about whose log it is: the host of a file per node, the rank of a file per rank.

Pure Python 3.8+ standard library. diagnosis.log asks these only for lines that name no host or rank
themselves (a torchrun traceback, a Gloo error): what the lines say always wins over the name.

People keep one log per node under the node's name ("node1.log", "gpu-node-03.txt.gz",
"worker-1-describe.txt", "10.0.0.5.log") or one per rank ("rank3.log"). A name is taken for a host
only when it has the shape of one: a word with a digit in it ("node1", "vm-2", "ip-10-0-0-5"), an IPv4
address, or a name the logs themselves give a host. Names of runs and tools ("train.log",
"slurm-9001.out", "run7.log", "rank0.log", "pretrain-88412-6.out" with a job id) are not hosts; a host's
name after a job id is ("train-88713-gpu-n04.out", Slurm's %x-%j-%N).
"""

from __future__ import annotations

import os
import re
from typing import Collection, Optional

_FILE_RANK = re.compile(r"(?:^|[^a-z])rank[_\-.]?(?P<rank>\d+)(?!\d)", re.I)
_EXTENSIONS = frozenset(("gz", "bz2", "xz", "zst", "log", "txt", "out", "err", "stdout", "stderr", "json"))
# What people add around the host's name, and where each word may stand: "after" the name (dropped
# from the end), "cut" (the word and everything after it dropped), "before" the name (dropped from the
# start). One vocabulary: a word's places are all listed here.
_WORDS_AROUND_HOST = {
    "torchrun": "after cut", "launcher": "after cut", "journal": "after cut", "kernel": "after cut",
    "syslog": "after cut", "ras": "after cut",
    "journalctl": "after cut before", "dmesg": "after cut before", "describe": "after cut before",
    "nvidia": "cut before",
    "log": "after before", "logs": "after before",
    "agent": "after", "stdout": "after", "stderr": "after", "out": "after", "err": "after", "nccl": "after",
    "debug": "after", "train": "after", "trainer": "after", "worker": "after",
    "kubectl": "before", "smi": "before", "cloud": "before", "logging": "before",
}


def _words_at(place: str) -> frozenset:
    return frozenset(word for word, places in _WORDS_AROUND_HOST.items() if place in places.split())


_TOOL_WORDS, _CUT_WORDS, _LEADING_TOOL_WORDS = _words_at("after"), _words_at("cut"), _words_at("before")
_TOOL_RANK = re.compile(r"^(?:local)?rank\d+$", re.I)
_HOST_SHAPE = re.compile(r"^(?:[a-z][a-z0-9\-]*\d[a-z0-9\-]*(?:\.[a-z][a-z0-9\-]*)*|\d{1,3}(?:\.\d{1,3}){3})$", re.I)
# A word and a number only, where the word names a run, a device or a part rather than a machine.
_NOT_HOST = re.compile(r"^(?:rank|localrank|local-rank|proc|process|pid|task|part|chunk|run|job|slurm|attempt|try|"
                       r"step|epoch|iter|batch|cuda|test|tests|out|output|log|logs|result|results|"
                       r"sweep|exp|trial|v|version)[\-_.]?\d+(?:[\-_.]\d+)*$", re.I)
_DATE = re.compile(r"\d{4}-?\d\d-?\d\d")
# A number of five or more digits on its own: a scheduler's job id ("pretrain-88412-6": Slurm's %x-%j-%t).
_JOB_ID = re.compile(r"(?:^|[\-_.])\d{5,}(?:[\-_.]|$)")


def file_rank(source: Optional[str]) -> Optional[int]:
    """The rank a file per rank names ("rank3.log", "train_rank12.txt"), else None."""
    match = _FILE_RANK.search(os.path.basename(source or ""))
    return int(match.group("rank")) if match else None


def file_host(source: Optional[str], hosts: Collection[str] = ()) -> Optional[str]:
    """The host a file per node is named after, else None; hosts: the names the logs give hosts."""
    if not source or source.startswith("<"):
        return None
    parts = os.path.basename(source).split(".")
    # "node1.log.gz", and a tool's word as an extension: "gpu-sfo-117.torchrun.log", "node2.dmesg.txt".
    while len(parts) > 1 and (parts[-1].lower() in _EXTENSIONS or parts[-1].lower() in _TOOL_WORDS):
        parts.pop()
    stem = ".".join(parts)
    if stem in hosts:
        return stem
    words = re.split(r"([\-_])", stem)
    # "node3-torchrun", "worker-1-describe", "node0_rank1", "gpu-n07-dmesg-T": drop the tool and rank
    # words (and a tool's one-letter flag) after the name.
    while len(words) > 2 and (words[-1].lower() in _TOOL_WORDS or _TOOL_RANK.match(words[-1])
                              or len(words) > 4 and len(words[-1]) == 1 and words[-1].isalpha()
                              and words[-3].lower() in _TOOL_WORDS):
        del words[-2:]
    # "gpu-e02-dmesg-xid", "node2-journalctl-k-since-boot": everything from a tool's name on.
    cut = next((i for i in range(2, len(words), 2) if words[i].lower() in _CUT_WORDS), None)
    if cut is not None:
        del words[cut - 1:]
    # "kubectl-logs-worker-2", "logs-node3": the tool's words before the name.
    leading = False
    while len(words) > 2 and (words[0].lower() in _LEADING_TOOL_WORDS or leading and len(words[0]) == 1):
        del words[:2]
        leading = True
    name = "".join(words)
    if name in hosts:
        return name
    after_job = _JOB_ID.split(name)[-1] if _JOB_ID.search(name) else ""
    if after_job and (after_job in hosts or _HOST_SHAPE.match(after_job) and not _NOT_HOST.match(after_job)
                      and "_" not in after_job):
        return after_job  # Slurm's %x-%j-%N: "train-88713-gpu-n04" is the job's log on gpu-n04
    if not _HOST_SHAPE.match(name) or _NOT_HOST.match(name) or _DATE.search(name) or _JOB_ID.search(name) \
            or "_" in name:
        return None
    return name
