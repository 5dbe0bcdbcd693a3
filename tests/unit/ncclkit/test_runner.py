"""ncclkit.runner drives real ansible-playbook runs through ansible-runner (local connection)."""

import sys

from conftest import REPO_ROOT
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
