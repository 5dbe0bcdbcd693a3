"""The Ansible configuration a run uses, and the connection settings ncclkit adds where it says nothing.

Every task costs the controller a worker and the host a connection; three settings keep that cost
low on any cluster: pipelining (a module is sent over the open connection instead of being copied
to a temporary file first), SSH's ControlPersist (one SSH connection a host for the whole run: it
is in ansible-core's default `ssh_args`) and a fixed Python interpreter (no discovery round trip a
host). The checkout's ansible.cfg sets them; an installed ncclkit run with the user's own
ansible.cfg, or none, gets them here as environment variables, but only where neither that file
nor the environment nor (for the interpreter) the inventory chooses otherwise: a user's choice is
kept.
"""

from __future__ import annotations

import configparser
import os
from pathlib import Path

# Where ansible-core reads each setting: (environment variables, (ini section, key) pairs).
PIPELINING = (("ANSIBLE_PIPELINING", "ANSIBLE_SSH_PIPELINING"),
              (("connection", "pipelining"), ("ssh_connection", "pipelining")))
INTERPRETER = (("ANSIBLE_PYTHON_INTERPRETER",), (("defaults", "interpreter_python"),))

# What ncclkit sets where nothing else does. /usr/bin/python3 is the interpreter ansible-core's
# discovery picks on every distribution the roles support; an inventory's ansible_python_interpreter
# still wins for a host whose Python lives elsewhere.
DEFAULTS = {"ANSIBLE_PIPELINING": "True", "ANSIBLE_PYTHON_INTERPRETER": "/usr/bin/python3"}
SETTING_OF = {"ANSIBLE_PIPELINING": PIPELINING, "ANSIBLE_PYTHON_INTERPRETER": INTERPRETER}


def config_file(project_dir: Path, environ: dict | None = None, cwd: Path | None = None) -> Path | None:
    """The ansible.cfg ansible-playbook should read: $ANSIBLE_CONFIG, else the project's (the
    checkout's), else the one ansible-playbook would find from where the user runs ncclkit
    (./ansible.cfg unless that folder is world-writable, ~/.ansible.cfg, /etc/ansible/ansible.cfg)."""
    environ = os.environ if environ is None else environ
    if environ.get("ANSIBLE_CONFIG"):
        return Path(environ["ANSIBLE_CONFIG"]).expanduser()
    if (project_dir / "ansible.cfg").is_file():
        return (project_dir / "ansible.cfg").resolve()
    here = Path.cwd() if cwd is None else cwd
    candidates = [] if here.stat().st_mode & 0o002 else [here / "ansible.cfg"]  # as ansible-core: not world-writable
    candidates += [Path(environ.get("HOME", "~")).expanduser() / ".ansible.cfg", Path("/etc/ansible/ansible.cfg")]
    return next((path.resolve() for path in candidates if path.is_file()), None)


def chosen(setting: tuple, config: Path | None, environ: dict) -> bool:
    """Whether the environment or the configuration file sets this setting."""
    names, entries = setting
    if any(name in environ for name in names):
        return True
    if config is None or not config.is_file():
        return False
    parser = configparser.ConfigParser(interpolation=None, strict=False, inline_comment_prefixes=(";",))
    try:
        parser.read(config)
    except configparser.Error:
        return False  # ansible-playbook names the broken file itself
    return any(parser.has_option(section, key) for section, key in entries)


def added_settings(config: Path | None, environ: dict | None = None) -> dict:
    """The environment variables ncclkit adds: its defaults for what neither sets."""
    environ = os.environ if environ is None else environ
    return {name: value for name, value in DEFAULTS.items() if not chosen(SETTING_OF[name], config, environ)}
