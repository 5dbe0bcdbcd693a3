"""ncclkit.runner drives real ansible-playbook runs through ansible-runner (local connection)."""

import signal
import subprocess
import sys
import threading
import time
import uuid

from conftest import REPO_ROOT
from ncclkit import runner
from ncclkit.progress import PlainProgress
from ncclkit.runner import run_playbook

PLAYBOOK = """
- name: Runner probe
  hosts: cluster
  gather_facts: false
  tasks:
    - name: Say hello
      ansible.builtin.debug:
        msg: "hello from {{ inventory_hostname }} {{ probe_word | default('') }}"
    - name: Fail when asked
      ansible.builtin.fail:
        msg: asked to fail
      when: probe_fail | default(false) | bool
"""


def _inventory(tmp_path):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        "cluster:\n  hosts:\n    probe1:\n      ansible_connection: local\n"
        f"      ansible_python_interpreter: {sys.executable}\n")
    return inventory


def test_run_playbook_streams_progress_events_and_returns_stats(tmp_path):
    playbook = tmp_path / "probe.yml"
    playbook.write_text(PLAYBOOK)
    events = []
    result = run_playbook(playbook, _inventory(tmp_path), project_dir=REPO_ROOT,
                          extravars={"probe_word": "there"}, on_event=events.append)
    assert result.rc == 0 and result.status == "successful"
    assert result.stats["ok"] == {"probe1": 1}
    starts = [e["event_data"]["task"] for e in events if e["event"] == "runner_on_start"]
    assert starts == ["Say hello", "Fail when asked"]  # per host, before its `when` skips it
    tasks = [e["event_data"]["task"] for e in events if e["event"] == "playbook_on_task_start"]
    assert tasks == ["Say hello", "Fail when asked"]
    messages = [e["event_data"]["res"]["msg"] for e in events if e["event"] == "runner_on_ok"]
    assert messages == ["hello from probe1 there"]


def test_run_playbook_reports_the_failing_host_and_task(tmp_path, capsys):
    playbook = tmp_path / "probe.yml"
    playbook.write_text(PLAYBOOK)
    result = run_playbook(playbook, _inventory(tmp_path), project_dir=REPO_ROOT,
                          extravars={"probe_fail": True}, on_event=PlainProgress())
    assert result.rc != 0 and result.status == "failed"
    assert result.failures == [{"host": "probe1", "task": "Fail when asked", "msg": "asked to fail"}]
    printed = capsys.readouterr().out
    assert "== Runner probe" in printed and "[2] Fail when asked" in printed
    assert "probe1: failed (ok=1 changed=0 failed=1 unreachable=0): asked to fail" in printed


SLEEPER = """
- name: Runner probe
  hosts: cluster
  gather_facts: false
  tasks:
    - name: Sleep
      ansible.builtin.command: "sleep {{ probe_sleep }}"
      changed_when: false
"""


def _in_a_thread(call, bound_s):
    """`call()` in a daemon thread, waited for at most bound_s: a hang fails the test, never holds it."""
    outcome = {}

    def target():
        try:
            outcome["value"] = call()
        except BaseException as error:  # noqa: BLE001 - KeyboardInterrupt is the outcome under test
            outcome["error"] = error

    worker = threading.Thread(target=target, daemon=True)
    started = time.monotonic()
    worker.start()
    worker.join(bound_s)
    assert not worker.is_alive(), f"run_playbook still running {bound_s} s after Ctrl-C: the stop hangs"
    return outcome, time.monotonic() - started


def _interrupt_at(task_name, running=None):
    """Ctrl-C once the task starts (and, given `running`, once that command runs: a Ctrl-C before the
    worker starts it is ansible-playbook's race, not the stop's)."""
    def on_event(event):
        if event["event"] == "runner_on_start" and event["event_data"]["task"] == task_name:
            deadline = time.monotonic() + 30
            while running and not _pids_of(running) and time.monotonic() < deadline:
                time.sleep(0.1)
            raise KeyboardInterrupt
    return on_event


def test_ctrl_c_stops_ansible_playbook_and_its_task_and_is_raised_again(tmp_path):
    playbook = tmp_path / "sleep.yml"
    playbook.write_text(SLEEPER)
    duration = f"{int(time.time()) % 1000 + 200}.{uuid.uuid4().int % 10**6}"   # names this run's sleep
    outcome, seconds = _in_a_thread(lambda: run_playbook(
        playbook, _inventory(tmp_path), project_dir=REPO_ROOT, extravars={"probe_sleep": duration},
        on_event=_interrupt_at("Sleep", f"sleep {duration}")), runner.STOP_GRACE_S + runner.CANCEL_JOIN_S + 60)
    assert isinstance(outcome.get("error"), KeyboardInterrupt), outcome
    deadline = time.monotonic() + 15
    while _pids_of(f"sleep {duration}") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _pids_of(f"sleep {duration}"), "the task's sleep outlived the interrupted play"


def test_a_play_that_does_not_stop_in_time_leaves_no_task_running(tmp_path, monkeypatch):
    """No grace at all: ansible-playbook cannot have stopped its workers, which run in sessions of
    their own and may be about to start the task's command; ncclkit kills the whole tree."""
    monkeypatch.setattr(runner, "STOP_GRACE_S", 0)
    playbook = tmp_path / "sleep.yml"
    playbook.write_text(SLEEPER)
    duration = f"{int(time.time()) % 1000 + 300}.{uuid.uuid4().int % 10**6}"
    outcome, seconds = _in_a_thread(lambda: run_playbook(
        playbook, _inventory(tmp_path), project_dir=REPO_ROOT, extravars={"probe_sleep": duration},
        on_event=_interrupt_at("Sleep")), runner.CANCEL_JOIN_S + 30)
    assert isinstance(outcome.get("error"), KeyboardInterrupt), outcome
    time.sleep(3)   # a worker that escaped would have started its sleep by now
    assert not _pids_of(f"sleep {duration}"), "a task's command outlived the interrupted play"


class _StuckRunner:
    """Stands in for an ansible-runner Runner that never ends, whatever its cancel flag says: the
    case the bounded stop exists for. Its 'ansible-playbook' is a real process group leader (a sleep
    that ignores SIGINT, as a stuck ansible-playbook does not stop on it)."""

    def __init__(self, process, **kwargs):
        self.process, self.kwargs = process, kwargs
        self.released = threading.Event()

    def run(self):
        self.kwargs["event_handler"]({"event": "runner_on_start", "pid": self.process.pid,
                                      "event_data": {"task": "Sleep", "host": "probe1"}})
        self.released.wait()   # ignores the cancel callback for good


def test_ctrl_c_returns_in_bounded_time_when_ansible_runner_never_ends(tmp_path, monkeypatch):
    process = subprocess.Popen(["sleep", "300"], start_new_session=True,   # leads its own group
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    stuck = []
    monkeypatch.setattr(runner, "init_runner", lambda **kwargs: stuck.append(_StuckRunner(process, **kwargs))
                        or stuck[-1])
    monkeypatch.setattr(runner, "STOP_GRACE_S", 1)
    monkeypatch.setattr(runner, "CANCEL_JOIN_S", 1)
    try:
        outcome, seconds = _in_a_thread(lambda: run_playbook(
            tmp_path / "unused.yml", tmp_path / "unused.yml", project_dir=tmp_path,
            on_event=_interrupt_at("Sleep")), 20)
        assert isinstance(outcome.get("error"), KeyboardInterrupt), outcome
        assert seconds < 10, f"the stop took {seconds:.1f} s, beyond its bounds (1 + 1 + 0.5 s)"
        assert process.wait(timeout=5) == -signal.SIGKILL   # ncclkit killed the group itself
        assert stuck[0].kwargs["cancel_callback"](), "the cancel flag was never set"
    finally:
        process.kill()
        for each in stuck:
            each.released.set()


def _pids_of(command):
    found = subprocess.run(["pgrep", "-f", f"^{command}$"], capture_output=True, text=True, check=False)
    return found.stdout.split()
