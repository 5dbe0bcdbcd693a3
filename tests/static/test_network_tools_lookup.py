"""nccl_network's install step (and nccl_tests' for the build tools) looks for the commands with one
raw shell, and asks the package manager only when one is missing: those shells, rendered as the
roles render them and run."""

import subprocess

import yaml
from ansible.plugins.filter.core import quote
from jinja2 import Environment

from conftest import REPO_ROOT

TASKS = yaml.safe_load((REPO_ROOT / "roles" / "nccl_network" / "tasks" / "install.yml").read_text())


def rendered(commands):
    look = next(task for task in TASKS if "ansible.builtin.raw" in task)
    environment = Environment()
    environment.filters["quote"] = quote
    return environment.from_string(look["ansible.builtin.raw"]).render(_nccl_network_commands=commands)


def run(commands):
    return subprocess.run(["sh", "-c", rendered(commands)], capture_output=True, text=True, check=False, timeout=30)


def test_nothing_is_missing_when_every_command_is_there():
    done = run(["sh", "ls"])
    assert done.returncode == 0 and done.stdout == ""


def test_a_missing_command_is_named_and_the_shell_still_succeeds():
    done = run(["sh", "no-such-command-ncclkit", "ls"])
    assert done.returncode == 0 and done.stdout == "missing: no-such-command-ncclkit\n"


def test_sbin_commands_are_found_without_sbin_in_the_path():
    # nft and iptables live in /usr/sbin, which a non-root login's PATH may lack.
    done = subprocess.run(["sh", "-c", rendered(["sysctl"])], capture_output=True, text=True, check=False,
                          env={"PATH": "/usr/bin:/bin"}, timeout=30)
    assert done.stdout == ""


def test_the_install_steps_run_only_when_something_is_missing():
    # One include a host (one skip where nothing is missing), not a skip per step.
    include = next(task for task in TASKS if "ansible.builtin.include_tasks" in task)
    assert include["when"] == "'missing: ' in __nccl_network_commands_found.stdout"
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
