"""Run a host command with a time limit: the one runner of nccl_firewall and nccl_reachability.

Python 3.8+ standard library. AnsibleModule.run_command has no time limit, and a firewall tool
that waits on a hung D-Bus would hold the play forever.
"""

from __future__ import annotations

import subprocess

MISSING = 127
TIMED_OUT = 124


class CommandTimeout(RuntimeError):
    """A command ran past its time limit; the message names it."""


def run_command(argv, timeout, data=None, raise_timeout=False):
    """argv -> (rc, stdout, stderr); rc 127 when the command is missing, 124 on timeout (or
    CommandTimeout with `raise_timeout`). `data` goes to the command's standard input."""
    try:
        done = subprocess.run(argv, input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=timeout, check=False)
    except FileNotFoundError:
        return MISSING, "", f"{argv[0]}: command not found"
    except subprocess.TimeoutExpired:
        message = f"`{' '.join(argv)}` did not finish within {timeout} s"
        if raise_timeout:
            raise CommandTimeout(message) from None
        return TIMED_OUT, "", message
    return done.returncode, done.stdout, done.stderr
