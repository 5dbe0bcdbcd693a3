"""`ncclkit run` for real: ansible-runner runs a small playbook on two local-connection hosts (and one
ssh host on 127.0.0.1's closed port 1 for the unreachable case), through the command line as a user
or CI runs it, with stdout not a terminal (and once on a pseudo-terminal for the live table)."""

import json
import os
import pty
import re
import select
import signal
import stat
import subprocess
import sys
import time
import uuid

import pytest

from conftest import REPO_ROOT

PLAYBOOK = """
- name: Run probe
  hosts: all
  gather_facts: false
  tasks:
    - name: Write the marker
      ansible.builtin.copy:
        dest: "{{ marker_dir }}/{{ inventory_hostname }}.txt"
        content: "{{ probe_word | default('plain') }}\\n"
        mode: "0600"
      tags: [write]
    - name: Say the word
      ansible.builtin.debug:
        msg: >-
          word={{ probe_word | default('plain') }} number={{ probe_number | default(0) }}
          typed={{ probe_number is defined and probe_number is number }}
      tags: [say]
    - name: Fail when asked
      ansible.builtin.fail:
        msg: asked to fail
      when: probe_fail | default(false) | bool
    - name: Sleep when asked
      ansible.builtin.command: "sleep {{ probe_sleep }}"
      changed_when: false
      when: probe_sleep is defined
"""

LOCAL = f"ansible_connection: local, ansible_python_interpreter: {sys.executable}"
# Port 1 on loopback: nothing listens, so ssh is refused at once.
DEAD = ("ansible_host: 127.0.0.1, ansible_port: 1, ansible_connection: ssh, "
        "ansible_ssh_common_args: '-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null'")


@pytest.fixture
def probe(tmp_path):
    (tmp_path / "probe.yml").write_text(PLAYBOOK)
    (tmp_path / "hosts.yml").write_text(f"cluster:\n  hosts:\n    probe1: {{{LOCAL}}}\n    probe2: {{{LOCAL}}}\n")
    (tmp_path / "markers").mkdir()
    (tmp_path / "vars.yml").write_text(f"marker_dir: {tmp_path / 'markers'}\n")
    return tmp_path


def ncclkit(cwd, *argv, timeout=120):
    return subprocess.run([sys.executable, "-m", "ncclkit.cli", *argv], capture_output=True, text=True,
                          env=_env(), cwd=cwd, timeout=timeout, check=False)


def _env():
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "src"), str(REPO_ROOT / "collections")])}


def _log_of(done):
    found = re.search(r"log: (\S+)$", done.stdout.strip().splitlines()[-1])
    assert found, done.stdout
    return found.group(1)


def test_limit_extra_vars_diff_and_verbosity_reach_the_play(probe):
    done = ncclkit(probe, "run", "-i", "hosts.yml", "--playbook", "probe.yml", "--limit", "probe1", "--diff", "-v",
                   "-e", "@vars.yml", "-e", "probe_word=hello", "-e", '{"probe_number": 41}')
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in (probe / "markers").iterdir()) == ["probe1.txt"]   # --limit
    assert (probe / "markers" / "probe1.txt").read_text() == "hello\n"                # -e NAME=VALUE, @file
    assert "word=hello number=41 typed=True" in done.stdout                           # -e JSON, typed
    # One plain line per event, each host's counters, and the recap for the one host that ran.
    assert "    probe1: changed (ok=1 changed=1 failed=0 unreachable=0)" in done.stdout
    assert "probe2" not in done.stdout
    assert re.search(r"^  probe1\s+2\s+1\s+0\s+0\s+2\s+0\s+0$", done.stdout, re.M), done.stdout
    log = _log_of(done)
    folder = os.path.dirname(log)
    assert os.path.dirname(folder) == str(probe / "ncclkit-report") and os.path.basename(folder).startswith("run-")
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700 and stat.S_IMODE(os.stat(log).st_mode) == 0o600
    text = open(log).read()
    assert "PLAY RECAP" in text and "\x1b[" not in text
    assert "+++ after" in text                       # --diff: the new file's content
    assert "as config file" in text                  # -v: ansible-playbook's "Using ... as config file"


def test_check_changes_nothing(probe):
    done = ncclkit(probe, "run", "-i", "hosts.yml", "--playbook", "probe.yml", "--check", "-e", "@vars.yml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "probe1: changed" in done.stdout and "probe2: changed" in done.stdout   # it would change them
    assert list((probe / "markers").iterdir()) == []


def test_tags_and_skip_tags_select_the_tasks(probe):
    done = ncclkit(probe, "run", "-i", "hosts.yml", "--playbook", "probe.yml", "-e", "@vars.yml",
                   "--tags", "say,write", "--skip-tags", "write")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[1] Say the word" in done.stdout and "Write the marker" not in done.stdout
    assert list((probe / "markers").iterdir()) == []


def test_a_failed_task_is_1_and_json_names_it(probe):
    done = ncclkit(probe, "run", "-i", "hosts.yml", "--playbook", "probe.yml", "-e", "@vars.yml",
                   "-e", "probe_fail=true", "--json")
    assert done.returncode == 1, done.stdout + done.stderr
    document = json.loads(done.stdout)   # stdout is the document alone; progress went to stderr
    assert document["rc"] == 1 and document["unreachable"] == {}
    # In the order the hosts failed, which two forks decide between them.
    assert sorted(document["failures"], key=lambda failure: failure["host"]) == [
        {"host": h, "task": "Fail when asked", "msg": "asked to fail"} for h in ("probe1", "probe2")]
    assert document["hosts"]["probe1"]["failed"] == 1 and document["hosts"]["probe1"]["changed"] == 1
    assert os.path.isfile(document["log"]) and "asked to fail" in open(document["log"]).read()
    assert "probe1: failed (ok=2 changed=1 failed=1 unreachable=0): asked to fail" in done.stderr


def test_an_unreachable_host_is_4(probe):
    (probe / "hosts.yml").write_text(f"cluster:\n  hosts:\n    probe1: {{{LOCAL}}}\n    dead: {{{DEAD}}}\n")
    done = ncclkit(probe, "run", "-i", "hosts.yml", "--playbook", "probe.yml", "-e", "@vars.yml", "--json")
    assert done.returncode == 4, done.stdout + done.stderr
    document = json.loads(done.stdout)
    assert list(document["unreachable"]) == ["dead"] and "Connection refused" in document["unreachable"]["dead"]
    assert document["hosts"]["dead"]["unreachable"] == 1 and document["hosts"]["probe1"]["failed"] == 0
    assert document["failures"] == []


@pytest.mark.parametrize("argv, code, words", [
    (["-i", "broken.yml"], 3, "inventory broken.yml is broken"),
    (["-i", "missing.yml"], 3, "inventory missing.yml does not exist"),
    (["--playbook", "nosuch"], 3,
     "playbook nosuch does not exist: give a playbook file or one of the collection's (check, "),
    (["--playbook", "bad.yml"], 3, "bad.yml: YAML parsing failed"),
    (["--limit", "nohost"], 3, "--limit 'nohost' matches no host of hosts.yml"),
    (["-e", "@missing.yml"], 3, "extra-vars file missing.yml does not exist"),
    (["-e", "{not json"], 3, "do not parse"),
    (["-e", "novalue"], 2, "extra variable 'novalue' is not NAME=VALUE"),
])
def test_bad_input_is_one_line_and_no_run(probe, argv, code, words):
    (probe / "broken.yml").write_text("cluster:\n  hosts: [unclosed\n")
    (probe / "bad.yml").write_text("- hosts: all\n  tasks:\n    - debug: msg=hi\n   bad: [\n")
    done = ncclkit(probe, "run", "-i", "hosts.yml", "--playbook", "probe.yml", *argv)
    assert done.returncode == code, done.stderr
    assert done.stderr.startswith("ncclkit run: ") and words in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stdout == ""
    assert not (probe / "ncclkit-report").exists() or not any((probe / "ncclkit-report").iterdir())


def test_ctrl_c_stops_the_play_and_its_tasks_and_is_130(probe):
    duration = f"{int(time.time()) % 1000 + 100}.{uuid.uuid4().int % 10**6}"   # names this run's sleep
    child = subprocess.Popen(
        [sys.executable, "-m", "ncclkit.cli", "run", "-i", "hosts.yml", "--playbook", "probe.yml",
         "--limit", "probe1", "--skip-tags", "write,say", "-e", f"probe_sleep={duration}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), cwd=probe,
        preexec_fn=_sigint_as_in_a_terminal)
    try:
        _wait_for(lambda: _pids_of(f"sleep {duration}"), "the task's sleep to start")
        child.send_signal(signal.SIGINT)
        # Bounded by runner.STOP_GRACE_S, the cancel poll and ansible-runner's last 5 s read of the output.
        out, err = child.communicate(timeout=30)
    finally:
        child.kill()
    assert child.returncode == 130, out + err
    assert "ncclkit run: interrupted; the log so far: " in err
    log = err.strip().rsplit(" ", 1)[-1]
    assert "User interrupted execution" in open(log).read()
    _wait_for(lambda: not _pids_of(f"sleep {duration}"), "ansible-playbook to stop the task")


def test_a_terminal_gets_the_live_table_and_the_recap_table(probe):
    leader, follower = pty.openpty()
    child = subprocess.Popen(
        [sys.executable, "-m", "ncclkit.cli", "run", "-i", "hosts.yml", "--playbook", "probe.yml", "-e", "@vars.yml"],
        stdout=follower, stderr=subprocess.PIPE, env={**_env(), "COLUMNS": "120", "TERM": "xterm"}, cwd=probe)
    os.close(follower)
    output = b""
    while True:
        ready, dummy, dummy = select.select([leader], [], [], 60)
        try:
            chunk = os.read(leader, 65536) if ready else b""
        except OSError:   # the child closed the terminal
            chunk = b""
        if not chunk:
            break
        output += chunk
    os.close(leader)
    assert child.wait(timeout=60) == 0, child.stderr.read()
    raw = output.decode(errors="replace")
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", raw)
    assert "\x1b[" in raw and "┃ host" in text          # rich drew tables, with colour
    print(text)  # shown when the test fails: what a terminal showed
    assert re.search(r"│ probe1 +│ +2 │ +1 │ +0 │ +0 │ +2 │ +0 │ +0 │", text), text
    assert "word=plain number=0 typed=False" in text


def _sigint_as_in_a_terminal():
    # A shell without job control starts a background command with SIGINT ignored, and its children
    # inherit that: Python then raises no KeyboardInterrupt, and Ctrl-C rightly does nothing (this
    # made one CI run, started in the background, fail). A terminal's foreground job has the default.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _pids_of(command):
    found = subprocess.run(["pgrep", "-f", f"^{command}$"], capture_output=True, text=True, check=False)
    return found.stdout.split()


def _wait_for(condition, what, timeout=30):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)
