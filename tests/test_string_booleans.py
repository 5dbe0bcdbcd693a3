"""`-e name=false` on the command line gives the string "false": the templates that branch on a
bool option take the branch the boolean would (one local ansible-playbook run per value)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from test_template_quoting import COMMON, PLAYBOOK, REPO_ROOT, output_prefix

TEMPLATES = [{"src": str(REPO_ROOT / "roles/nccl_tests/templates/build.sh.j2")},
             {"src": str(REPO_ROOT / "roles/nccl_profile/templates/ncclkit-mpirun.j2")}]


def render(tmp_path: Path, value: str) -> dict:
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    variables = dict(COMMON, _nccl_tests_runpath="/opt/nccl/lib")
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": {"node-1": {}}, "vars": variables}}))
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"), "ANSIBLE_LOCALHOST_WARNING": "0"}
    done = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"),
                           str(tmp_path / "play.yml"),
                           "-e", json.dumps({"out": str(tmp_path), "templates": TEMPLATES}),
                           # key=value extra vars: both arrive as strings, as a user types them.
                           "-e", f"nccl_tests_rpath={value} nccl_profile_ssh_trust={value}"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    prefix = output_prefix(tmp_path, "node-1")
    return {name: Path(f"{prefix}-{name}").read_text() for name in ("build.sh.j2", "ncclkit-mpirun.j2")}


@pytest.mark.parametrize("value, on", [("false", False), ("yes", True)])
def test_string_booleans_take_the_boolean_branch(tmp_path, value, on):
    rendered = render(tmp_path, value)
    assert ("export LD_RUN_PATH=/opt/nccl/lib" in rendered["build.sh.j2"]) is on
    assert ("unset LD_RUN_PATH" in rendered["build.sh.j2"]) is not on
    assert ("BatchMode=yes" in rendered["ncclkit-mpirun.j2"]) is on
