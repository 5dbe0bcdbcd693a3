"""Lines that nccl-tests output and NCCL logs share, defined once for both readers.

nccl_tests.text (the benchmark parser) and diagnosis.lines (the log diagnosis) both read the
"NCCL version" line, nccl-tests' device table row and its "Test ... failure" lines; a fix to
one of these patterns must reach both. Pure Python 3.8+ standard library.
"""

from __future__ import annotations

import re

# A count of at most 24 digits: int() refuses strings of thousands, and no real count has 25.
COUNT = r"\d{1,24}(?!\d)"

# "NCCL version 2.28.9+cuda13.0": version is all of it, number the x.y.z part.
NCCL_VERSION = re.compile(r"\bNCCL version (?P<version>(?P<number>\d+\.\d+\.\d+)\S*)")

# nccl-tests' device table, after its "#": "Rank  0 Group  0 Pid 2841 on node0 device  0
# [0000:0f:00] NVIDIA H200" (2.13+: Group, PCI bus id) or "Rank  0 Pid 5092 on host device  0
# [0x21] Tesla V100" (before).
DEVICE_ROW = re.compile(
    r"Rank\s+(?P<rank>" + COUNT + r")\s+(?:Group\s+(?P<group>" + COUNT + r")\s+)?Pid\s+(?P<pid>" + COUNT
    + r")\s+on\s+(?P<host>\S+)\s+device\s+(?P<device>" + COUNT + r")\s+\[(?P<bus_id>[^\]]*)\]\s*(?P<name>.*)")

# nccl-tests' failure lines name the host first: "node0: Test NCCL failure common.cu:1550 '...'",
# "node0: Test CUDA failure ...", " .. node0 pid 2841: Test failure common.cu:1454" (2.10+) and
# " .. node0: Test failure ..." (2.0); a line whose host was cut off or stripped still counts, with
# host None. The look-behinds start a match only where a word can start, which keeps the search
# linear; a cut row or a launcher label may precede the host.
TEST_FAILURE = re.compile(
    r"(?:(?<![\w.\-])(?P<host>[\w.\-]+)(?: pid \d+)?: )?(?<![\w.\-])Test (?:(?P<kind>NCCL|CUDA) )?failure\b")


def device_row(comment):
    """The device-row match of a '#' line (with or without its '#'), else None."""
    body = comment.lstrip("#").lstrip()
    return DEVICE_ROW.match(body) if body.startswith("Rank") else None
