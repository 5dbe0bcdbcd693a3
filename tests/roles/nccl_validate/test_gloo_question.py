"""nccl_validate asks each host's training Python whether its torch has Gloo through raw, where
stderr may join stdout (a terminal): the role's own two tasks (gloo.yml), run on three local hosts
whose "Python" answers True between warnings, lacks torch, or does not exist."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml
from lab_playbook import play

REPO = Path(__file__).resolve().parents[3]
BLOCKER_TASK = "Record why this host cannot join the Gloo run"


def test_the_answer_is_found_between_warnings_and_a_missing_torch_or_python_is_named(tmp_path):
    warns = tmp_path / "warning-python"
    warns.write_text("#!/bin/sh\necho 'UserWarning: an import warning' >&2\necho True\necho 'at exit' >&2\n")
    no_torch = tmp_path / "no-torch-python"
    no_torch.write_text("#!/bin/sh\necho 'Traceback (most recent call last):' >&2\n"
                        "echo \"ModuleNotFoundError: No module named 'torch'\" >&2\nexit 1\n")
    for script in (warns, no_torch):
        script.chmod(0o755)
    tasks = yaml.safe_load((REPO / "roles/nccl_validate/tasks/gloo.yml").read_text())[:2]
    assert [task["name"] for task in tasks] == ["Ask the training Python whether its torch has Gloo", BLOCKER_TASK]
    play_file = tmp_path / "play.yml"
    play_file.write_text(yaml.safe_dump([{
        "name": "The Gloo question", "hosts": "all", "gather_facts": False, "tasks": tasks,
        "vars": {"_nccl_validate_gloo_probe": "print(True)",
                 "_nccl_validate_launch": {"torchrun": "/usr/local/bin/ncclkit-torchrun", "python": "{{ py }}"}}}],
        sort_keys=False))
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {
        "hosts": {"warns": {"py": str(warns)}, "notorch": {"py": str(no_torch)},
                  "nopython": {"py": str(tmp_path / "missing" / "python")}},
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}))
    done = play(inventory, str(play_file), structured=True, timeout=300)
    assert done.rc == 0, done.stdout[-3000:]
    blockers = {host: result["ansible_facts"]["_nccl_validate_gloo_blocker"]
                for host, result in done.task(BLOCKER_TASK).items()}
    assert blockers["warns"] == ""
    assert blockers["notorch"].startswith(f"notorch: {no_torch} has no torch with Gloo (ModuleNotFoundError: "
                                          "No module named 'torch'): set nccl_profile_python")
    assert blockers["nopython"].startswith("nopython: ")
    assert "missing/python: not found): set nccl_profile_python" in blockers["nopython"]
