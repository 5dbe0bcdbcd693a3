"""When a line was written, from the timestamp it carries, on one scale for every log of a job.

Pure Python 3.8+ standard library. The stamps differ: NCCL's "[2025-10-16 22:16:08]" (NCCL 2.26+
stamps WARN lines by default, earlier ones none), torch's glog "E1205 04:47:09.474000 1234 file.py:12]"
(no year, no time zone), torchrun's error summary "time : 2025-12-05_04:47:09", ISO-8601 columns of
log collectors, syslog's "Dec  5 04:47:09". So a time is seconds since the start of a nominal year
(month, day and time of day; the year and the zone are dropped): comparable across hosts only
within a year and a zone, and never trusted closer than SKEW_S (clocks of two hosts differ).
"""

from __future__ import annotations

import re
from typing import Optional

# Two events on different hosts less than this apart are ordered by cause, not by their stamps.
SKEW_S = 5.0

_MONTHS = {name: index for index, name in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), start=1)}
_ISO = re.compile(r"(?:\d{4})-(?P<mo>\d\d)-(?P<d>\d\d)[ T_](?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d(?:[.,]\d+)?)")
_SYSLOG = re.compile(r"(?P<mon>[A-Z][a-z]{2}) +(?P<d>\d+) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d(?:\.\d+)?)")
# glog: level letter, MMDD, time; torch writes it at the start of its C++ and Python log lines.
# torch's C++ logger drops the month's leading zero inside brackets: "[E707 02:41:17.551320 ...".
_GLOG = re.compile(r"^\[?[IWEF](?P<mo>[01]?\d)(?P<d>[0-3]\d) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d(?:\.\d+)?) ")


# dmesg -T: "[Mon Feb 10 21:14:03 2025] NVRM: Xid ...".
_DMESG_T = re.compile(r"^\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?P<mon>[A-Z][a-z]{2}) +(?P<d>\d+) "
                      r"(?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d) \d{4}\]")


def seconds(month: int, day: int, hour: int, minute: int, second: float) -> float:
    return ((((month * 31 + day) * 24) + hour) * 60 + minute) * 60 + second


def parse_stamp(stamp: str) -> Optional[float]:
    """Seconds on the nominal-year scale for a stamp a line prefix carried, else None."""
    match = _ISO.search(stamp)
    if match:
        return seconds(int(match.group("mo")), int(match.group("d")), int(match.group("h")),
                       int(match.group("mi")), float(match.group("s").replace(",", ".")))
    match = _SYSLOG.match(stamp)
    if match and match.group("mon") in _MONTHS:
        return seconds(_MONTHS[match.group("mon")], int(match.group("d")), int(match.group("h")),
                       int(match.group("mi")), float(match.group("s")))
    return None


def line_time(line) -> Optional[float]:
    """The time a diagnosis.lines.Line was written, when it says; None otherwise."""
    if line.stamp:
        return parse_stamp(line.stamp)
    text = line.text.lstrip()
    match = _GLOG.match(text)
    if match:
        return seconds(int(match.group("mo")), int(match.group("d")), int(match.group("h")),
                       int(match.group("mi")), float(match.group("s")))
    if text.startswith("[") and text[1:4] in ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"):
        match = _DMESG_T.match(text)
        if match and match.group("mon") in _MONTHS:
            return seconds(_MONTHS[match.group("mon")], int(match.group("d")), int(match.group("h")),
                           int(match.group("mi")), float(match.group("s")))
    if text.startswith("time") and ":" in text[:12]:
        # torchrun's ChildFailedError summary: "  time      : 2025-12-05_04:47:09"
        return parse_stamp(text)
    return None


def earlier(first: Optional[float], second: Optional[float]) -> bool:
    """Whether `first` happened before `second` by more than the clock-skew margin."""
    return first is not None and second is not None and second - first > SKEW_S
