"""`ncclkit run` and `ncclkit report` follow the shared exit-code table (docs/cli.md)."""

import os
import subprocess
import sys

import pytest

from conftest import REPO_ROOT
from ncclkit.commands.run import exit_code


def ncclkit(*argv):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "src"), str(REPO_ROOT / "collections")])}
    return subprocess.run([sys.executable, "-m", "ncclkit.cli", *argv], capture_output=True, text=True, env=env,
                          cwd=REPO_ROOT, timeout=120, check=False)


@pytest.mark.parametrize("argv, code, words", [
    (["run", "-i", "/nonexistent/hosts.yml"], 3, "inventory /nonexistent/hosts.yml does not exist"),
    (["run", "-i", "inventories/lab", "--playbook", "/nonexistent.yml"], 3, "playbook /nonexistent.yml does not exist"),
    (["run", "-i", "inventories/lab", "-e", "novalue"], 2, "is not NAME=VALUE"),
    (["run", "-i", "inventories/lab", "-e", "a=1 novalue"], 2, "is not NAME=VALUE"),
])
def test_run_refuses_bad_input_with_one_line(argv, code, words):
    done = ncclkit(*argv)
    assert done.returncode == code and words in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert done.stdout == ""


def test_report_of_a_folder_without_a_report_is_bad_input(tmp_path):
    done = ncclkit("report", str(tmp_path))
    assert done.returncode == 3 and done.stderr.startswith("ncclkit report: ") and done.stdout == ""


@pytest.mark.parametrize("playbook_rc, unreachable, code", [
    (0, {}, 0), (2, {}, 1), (1, {}, 1), (250, {}, 1),
    (4, {"node2": "Connection refused"}, 4), (6, {"node2": "Connection refused"}, 4),  # failed and unreachable
    (4, {}, 1),  # 4 without an unreachable host: ansible-playbook's parser error (run_command says 3)
    (4, None, 4),
])
def test_the_playbook_s_code_maps_onto_the_table(playbook_rc, unreachable, code):
    assert exit_code(playbook_rc, unreachable) == code
