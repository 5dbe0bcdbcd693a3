"""The connection settings an ncclkit run holds outside the checkout: the user's own ansible.cfg (or
none) and an inventory without ansible_python_interpreter still get pipelining, ControlPersist and
no interpreter discovery; whatever the user's file, environment or inventory chooses is kept."""

import os
import sys

import pytest

from ncclkit.ansible_settings import added_settings, config_file
from ncclkit.runner import run_playbook

# Reads back what ansible-playbook runs with: the settings (config lookups), whether a module run
# discovered its interpreter (and whether it ran), and which configuration file was read (forks is
# set only there).
PROBE = """
- name: Settings probe
  hosts: cluster
  gather_facts: false
  tasks:
    - name: Run a module
      ansible.builtin.ping:
      register: pinged
      ignore_errors: true   # a discovered interpreter may be a broken one (this machine's pyenv shim)
    - name: Say the settings
      ansible.builtin.debug:
        msg: >-
          pipelining={{ lookup('ansible.builtin.config', 'pipelining', plugin_type='connection', plugin_name='ssh') }}
          ssh_args={{ lookup('ansible.builtin.config', 'ssh_args', plugin_type='connection', plugin_name='ssh') }}
          discovered={{ pinged.ansible_facts.discovered_interpreter_python | default('none') }}
          ping={{ pinged.ping | default('failed') }}
          forks={{ lookup('ansible.builtin.config', 'DEFAULT_FORKS') }}
"""


@pytest.fixture
def user(tmp_path, monkeypatch):
    """A user's folder (the playbook, an inventory without ansible_python_interpreter), an installed
    collection's folder without ansible.cfg, and an environment that names no configuration."""
    for name in ("ANSIBLE_CONFIG", "ANSIBLE_PIPELINING", "ANSIBLE_SSH_PIPELINING", "ANSIBLE_PYTHON_INTERPRETER",
                 "ANSIBLE_SSH_ARGS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    (tmp_path / "installed").mkdir()
    work = tmp_path / "work"
    work.mkdir()
    (work / "probe.yml").write_text(PROBE)
    (work / "hosts.yml").write_text("cluster:\n  hosts:\n    probe1:\n      ansible_connection: local\n")
    monkeypatch.chdir(work)
    return work


def _said(work, tmp_path):
    events = []
    result = run_playbook(work / "probe.yml", work / "hosts.yml", project_dir=tmp_path / "installed",
                          on_event=events.append)
    assert result.rc == 0, result.failures
    return next(e["event_data"]["res"]["msg"] for e in events
                if e["event"] == "runner_on_ok" and e["event_data"]["task"] == "Say the settings")


@pytest.mark.skipif(not os.path.exists("/usr/bin/python3"), reason="needs /usr/bin/python3, the default interpreter")
def test_the_users_own_ansible_cfg_gets_pipelining_controlpersist_and_no_discovery(user, tmp_path):
    (user / "ansible.cfg").write_text("[defaults]\nforks = 7\n")
    said = _said(user, tmp_path)
    assert "forks=7" in said               # the user's file in their folder was read
    assert "pipelining=True" in said
    assert "ControlPersist=" in said      # ansible-core's default ssh_args, kept
    assert "discovered=none" in said and "ping=pong" in said   # the module ran, with no discovery


def test_what_the_user_chooses_is_kept(user, tmp_path):
    (user / "ansible.cfg").write_text("[defaults]\nforks = 9\ninterpreter_python = auto_silent\n"
                                      "[ssh_connection]\npipelining = False\nssh_args = -o ControlMaster=no\n")
    said = _said(user, tmp_path)
    assert "forks=9" in said and "pipelining=False" in said and "ssh_args=-o ControlMaster=no" in said
    assert "discovered=/" in said         # the user asked for discovery: it ran


def test_the_inventorys_interpreter_wins_over_the_added_default(user, tmp_path):
    (user / "hosts.yml").write_text("cluster:\n  hosts:\n    probe1:\n      ansible_connection: local\n"
                                    f"      ansible_python_interpreter: {sys.executable}\n")
    said = _said(user, tmp_path)
    assert "discovered=none" in said and "ping=pong" in said


def test_config_file_order(tmp_path):
    project, here, home = tmp_path / "project", tmp_path / "here", tmp_path / "home"
    for folder in (project, here, home):
        folder.mkdir()
    environ = {"HOME": str(home)}
    assert config_file(project, environ, here) in (None, config_file(project, environ, here))  # /etc's, if any
    (home / ".ansible.cfg").write_text("[defaults]\n")
    assert config_file(project, environ, here) == (home / ".ansible.cfg").resolve()
    (here / "ansible.cfg").write_text("[defaults]\n")
    assert config_file(project, environ, here) == (here / "ansible.cfg").resolve()
    here.chmod(0o777)   # ansible-core ignores ./ansible.cfg in a world-writable folder, and so does ncclkit
    assert config_file(project, environ, here) == (home / ".ansible.cfg").resolve()
    (project / "ansible.cfg").write_text("[defaults]\n")
    assert config_file(project, environ, here) == (project / "ansible.cfg").resolve()
    assert config_file(project, {**environ, "ANSIBLE_CONFIG": "/x/y.cfg"}, here) == tmp_path.joinpath("/x/y.cfg")


@pytest.mark.parametrize(("text", "environ", "added"), [
    ("", {}, {"ANSIBLE_PIPELINING", "ANSIBLE_PYTHON_INTERPRETER"}),
    ("[connection]\npipelining = false\n", {}, {"ANSIBLE_PYTHON_INTERPRETER"}),
    ("[ssh_connection]\npipelining = false\n", {}, {"ANSIBLE_PYTHON_INTERPRETER"}),
    ("[defaults]\ninterpreter_python = /opt/py/bin/python3 ; ours\n", {}, {"ANSIBLE_PIPELINING"}),
    ("", {"ANSIBLE_SSH_PIPELINING": "0", "ANSIBLE_PYTHON_INTERPRETER": "auto"}, set()),
    ("[defaults\nbroken", {}, {"ANSIBLE_PIPELINING", "ANSIBLE_PYTHON_INTERPRETER"}),
])
def test_added_settings_only_where_nothing_chooses(tmp_path, text, environ, added):
    config = tmp_path / "ansible.cfg"
    config.write_text(text)
    assert set(added_settings(config, environ)) == added
