"""host.command.run_command, the one runner of the modules' host commands: what the toolchain
search needs of it (stderr merged in order, no stdin, the output of a command stopped at its
timeout, a file that cannot be run). The firewall's needs are in test_nccl_firewall_module."""

from __future__ import annotations

import sys

from ansible_collections.ncclkit.cluster.plugins.module_utils.host import toolchain
from ansible_collections.ncclkit.cluster.plugins.module_utils.host.command import (
    NOT_STARTED,
    TIMED_OUT,
    run_command,
)


def test_stderr_is_merged_in_the_order_printed_or_kept_apart():
    script = "import sys; print('one', flush=True); print('two', file=sys.stderr, flush=True); print('three')"
    assert run_command([sys.executable, "-c", script], 10, merge_stderr=True) == (0, "one\ntwo\nthree\n", "")
    assert run_command([sys.executable, "-c", script], 10) == (0, "one\nthree\n", "two\n")


def test_a_command_reading_stdin_gets_nothing_instead_of_the_modules_input():
    assert run_command([sys.executable, "-c", "import sys; print(repr(sys.stdin.read()))"], 10)[:2] == (0, "''\n")


def test_a_command_stopped_at_its_timeout_keeps_what_it_printed():
    script = "import time; print('9.0', flush=True); time.sleep(30)"
    rc, out, err = run_command([sys.executable, "-c", script], 1)
    assert (rc, out) == (TIMED_OUT, "9.0\n") and "did not finish within 1 s" in err


def test_a_file_that_cannot_be_run_is_126_naming_why(tmp_path):
    script = tmp_path / "tool"
    script.write_text("#!/bin/sh\necho never\n")   # not executable
    rc, out, err = run_command([str(script)], 10)
    assert (rc, out) == (NOT_STARTED, "") and err == f"{script}: Permission denied"


def test_the_toolchain_search_reads_through_it():
    script = "import sys; print('out'); print('err', file=sys.stderr)"
    assert toolchain.run_command([sys.executable, "-c", script]) == (0, "out\n")
    assert toolchain.run_command([sys.executable, "-c", script], merge_stderr=True) == (0, "out\nerr\n")
    assert toolchain.run_command([sys.executable, "-c", "import sys; print(sys.stdin.read())"],
                                 stdin_text="fed") == (0, "fed\n")
    assert toolchain.run_command(["ncclkit-no-such-tool"]) == (127, "")


def test_environ_update_adds_to_the_modules_environment(monkeypatch):
    monkeypatch.setenv("NCCLKIT_KEPT", "kept")
    script = "import os; print(os.environ['LC_ALL'], os.environ['NCCLKIT_KEPT'])"
    assert run_command([sys.executable, "-c", script], 10, environ_update={"LC_ALL": "C"})[:2] == (0, "C kept\n")
