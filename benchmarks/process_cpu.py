"""CPU seconds by command, from the kernel's process accounting (BSD acct, version 3 records).

`recording(path)` turns accounting on into `path` for the duration of a `with` block (root and the
`acct` package's `accton` are needed); `cpu_by_command(path)` sums user + system seconds of every
process that exited meanwhile by its command name (the kernel keeps 15 characters of it). On the
lab, the controller's share is `ansible-playboo` (the playbook and its forked workers) and `ssh`
(the connection's clients); everything else is the nodes' own work (modules, sshd, iperf3, the
firewall commands), which a real cluster runs on its own machines.
"""

from __future__ import annotations

import contextlib
import shutil
import struct
import subprocess
from collections import Counter
from pathlib import Path

# struct acct_v3 (linux/acct.h): flag, version, tty, exitcode, uid, gid, pid, ppid, btime, etime,
# utime, stime, mem, io, rw, minflt, majflt, swaps (comp_t each), comm[16].
RECORD = struct.Struct("<BBHIIIIIIf8H16s")
AHZ = 100  # comp_t ticks a second on Linux
CONTROLLER_COMMANDS = ("ansible-playboo", "ssh")


def comp_t(value: int) -> int:
    """A comp_t: 13-bit mantissa, 3-bit base-8 exponent."""
    return (value & 0x1FFF) << (3 * (value >> 13))


def cpu_by_command(path: Path) -> Counter:
    data = Path(path).read_bytes()
    seconds = Counter()
    for offset in range(0, len(data) - RECORD.size + 1, RECORD.size):
        fields = RECORD.unpack_from(data, offset)
        if fields[1] != 3:
            raise ValueError(f"{path}: record {offset // RECORD.size} is acct version {fields[1]}, not 3")
        command = fields[-1].split(b"\0", 1)[0].decode(errors="replace")
        seconds[command] += (comp_t(fields[10]) + comp_t(fields[11])) / AHZ
    return seconds


def controller_and_nodes(seconds: Counter) -> tuple:
    controller = sum(value for command, value in seconds.items() if command in CONTROLLER_COMMANDS)
    return controller, sum(seconds.values()) - controller


@contextlib.contextmanager
def recording(path: Path):
    accton = shutil.which("accton") or "/usr/sbin/accton"
    if not Path(accton).exists():
        raise SystemExit("--cpu needs process accounting: apt-get install acct (for accton)")
    Path(path).write_bytes(b"")
    subprocess.run([accton, str(path)], check=True, capture_output=True)
    try:
        yield
    finally:
        subprocess.run([accton, "off"], check=False, capture_output=True)
