"""Run a host command with a time limit: the one runner of the modules' host commands
(nccl_firewall, nccl_reachability, nccl_mtu, nccl_pair_perf, the survey's checks and toolchain search).

Python 3.8+ standard library. AnsibleModule.run_command has no time limit, and a firewall tool
that waits on a hung D-Bus would hold the play forever.
"""

from __future__ import annotations

import os
import subprocess

MISSING = 127
NOT_STARTED = 126   # found but not runnable (no permission, not an executable), as a shell says
TIMED_OUT = 124     # stopped at its timeout, as timeout(1) says


class CommandTimeout(RuntimeError):
    """A command ran past its time limit; the message names it."""


def run_command(argv, timeout, data=None, raise_timeout=False, merge_stderr=False, environ_update=None):
    """argv -> (rc, stdout, stderr); rc 127 when the command is missing, 126 when it cannot be
    started, 124 on timeout with what it printed until then (or CommandTimeout with
    `raise_timeout`). `data` goes to the command's standard input (else it reads nothing);
    `merge_stderr` puts its stderr into stdout, in the order printed; `environ_update` adds to
    the module's environment (e.g. LC_ALL=C for output that is parsed)."""
    env = dict(os.environ, **environ_update) if environ_update else None
    try:
        done = subprocess.run(argv, input=data, stdin=None if data is not None else subprocess.DEVNULL, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
                              text=True, errors="replace", timeout=timeout, check=False)
    except FileNotFoundError:
        return MISSING, "", f"{argv[0]}: command not found"
    except OSError as error:
        return NOT_STARTED, "", f"{argv[0]}: {error.strerror or error}"
    except subprocess.TimeoutExpired as expired:
        message = f"`{' '.join(argv)}` did not finish within {timeout} s"
        if raise_timeout:
            raise CommandTimeout(message) from None
        return TIMED_OUT, _text(expired.stdout), message
    return done.returncode, done.stdout, done.stderr or ""


def _text(printed):
    # TimeoutExpired keeps bytes even for a text-mode run.
    return printed.decode(errors="replace") if isinstance(printed, bytes) else printed or ""


def start_detached(argv):
    """Start `argv` in its own session with no terminal or pipes (a server that outlives the module run).

    Returns the Popen object; raises OSError when the program cannot start.
    """
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
