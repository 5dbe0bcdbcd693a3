"""nccl_network's host read (and nccl_tests' install step for the build tools) looks for the commands
with one raw shell, and the package manager is asked only when one is missing: those shells, rendered
as the roles render them and run."""

import subprocess

import yaml
from ansible.plugins.filter.core import quote
from jinja2 import Environment

from conftest import REPO_ROOT

TASKS = yaml.safe_load((REPO_ROOT / "roles" / "nccl_network" / "tasks" / "install.yml").read_text())
READ = yaml.safe_load((REPO_ROOT / "roles" / "nccl_network" / "tasks" / "preflight.yml").read_text())


def rendered(commands):
    look = next(task for task in READ if "ansible.builtin.raw" in task)
    environment = Environment()
    environment.filters["quote"] = quote
    return environment.from_string(look["ansible.builtin.raw"]).render(_nccl_network_commands=commands)


def run(commands, ssh_connection=None):
    env = {"PATH": "/usr/bin:/bin"}
    if ssh_connection is not None:
        env["SSH_CONNECTION"] = ssh_connection
    return subprocess.run(["sh", "-c", rendered(commands)], capture_output=True, text=True, check=False,
                          env=env, timeout=30)


def test_nothing_is_missing_when_every_command_is_there():
    done = run(["sh", "ls"])
    assert done.returncode == 0 and done.stdout == "ssh_connection: \n"


def test_a_missing_command_is_named_and_the_shell_still_succeeds():
    done = run(["sh", "no-such-command-ncclkit", "ls"], "10.0.0.1 50000 10.0.0.2 2222")
    assert done.returncode == 0
    assert done.stdout == "ssh_connection: 10.0.0.1 50000 10.0.0.2 2222\nmissing: no-such-command-ncclkit\n"


def test_sbin_commands_are_found_without_sbin_in_the_path():
    # nft and iptables live in /usr/sbin, which a non-root login's PATH may lack.
    done = run(["sysctl"])
    assert "missing" not in done.stdout


def test_the_install_steps_run_only_when_something_is_missing():
    # One include a host (one skip where nothing is missing), not a skip per step.
    include = next(task for task in TASKS if "ansible.builtin.include_tasks" in task)
    assert include["when"] == "'missing: ' in __nccl_network_host_read.stdout | default('')"
    steps_file = REPO_ROOT / "roles" / "nccl_network" / "tasks" / include["ansible.builtin.include_tasks"]["file"]
    steps = yaml.safe_load(steps_file.read_text())
    assert steps[-1]["name"] == "Install the check's tools and the firewall backend's package"


def test_nccl_tests_names_each_missing_build_tool_on_its_own_line():
    tasks = yaml.safe_load((REPO_ROOT / "roles" / "nccl_tests" / "tasks" / "install.yml").read_text())
    look = next(task for task in tasks if "ansible.builtin.raw" in task)
    environment = Environment()
    environment.filters["quote"] = quote
    shell = environment.from_string(look["ansible.builtin.raw"]).render(
        _nccl_tests_needed_tools=["sh", "no-such-compiler-ncclkit", "ls", "no-such-make-ncclkit"])
    done = subprocess.run(["sh", "-c", shell], capture_output=True, text=True, check=False, timeout=30)
    assert done.returncode == 0 and done.stdout.splitlines() == ["no-such-compiler-ncclkit", "no-such-make-ncclkit"]
