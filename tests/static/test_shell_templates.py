"""The shell templates as a user's run renders them: `-e name=false` on the command line gives
the string "false", and the templates that branch on a bool option take the branch the boolean
would; every rendered script, in both branches, is shellcheck-clean. One local ansible-playbook
run per value."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from test_template_quoting import COMMON, PLAYBOOK, REPO_ROOT, output_prefix

PROFILE = REPO_ROOT / "roles" / "nccl_profile" / "templates"
SCRIPTS = {name: PROFILE / name for name in ("ncclkit-torchrun.j2", "ncclkit-mpirun.j2", "ncclkit-env.j2",
                                             "ncclkit.sh.j2")}
SCRIPTS["build.sh.j2"] = REPO_ROOT / "roles" / "nccl_tests" / "templates" / "build.sh.j2"
# Values as a real host has them (test_template_quoting feeds hostile ones, which shellcheck rightly
# flags as literal `$(...)`).
REALISTIC = {"_nccl_tests_runpath": "/opt/nccl/lib",
             "_nccl_tests_stamp": {"binaries": ["all_reduce_perf", "all_gather_perf"]},
             "ncclkit_nccl": {"include_dir": "/opt/nccl/include", "library": "/opt/nccl/lib/libnccl.so.2",
                              "version": "2.28.9"}}


@pytest.fixture(scope="module", params=[("false", False), ("yes", True)], ids=["false", "yes"])
def rendered(request, tmp_path_factory):
    value, on = request.param
    work = tmp_path_factory.mktemp(f"templates-{value}")
    (work / "play.yml").write_text(PLAYBOOK)
    (work / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": {"node-1": {}}, "vars": {**COMMON, **REALISTIC}}}))
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"), "ANSIBLE_LOCALHOST_WARNING": "0"}
    templates = [{"src": str(path)} for path in SCRIPTS.values()]
    done = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(work / "hosts.yml"),
                           str(work / "play.yml"), "-e", json.dumps({"out": str(work), "templates": templates}),
                           # key=value extra vars: both arrive as strings, as a user types them.
                           "-e", f"nccl_tests_rpath={value} nccl_profile_ssh_trust={value}"],
                          capture_output=True, text=True, cwd=work, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    prefix = output_prefix(work, "node-1")
    return on, {name: Path(f"{prefix}-{name}") for name in SCRIPTS}


def test_string_booleans_take_the_boolean_branch(rendered):
    on, paths = rendered
    build, mpirun = paths["build.sh.j2"].read_text(), paths["ncclkit-mpirun.j2"].read_text()
    assert ("export LD_RUN_PATH=/opt/nccl/lib" in build) is on
    assert ("unset LD_RUN_PATH" in build) is not on
    assert ("BatchMode=yes" in mpirun) is on


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_rendered_scripts_are_shellcheck_clean(rendered, name):
    # shellcheck is one of the Makefile's APT_PACKAGES (ansible-test sanity uses it too).
    assert shutil.which("shellcheck"), "install shellcheck (make setup does)"
    dummy, paths = rendered
    check = subprocess.run(["shellcheck", "--format", "gcc", str(paths[name])], capture_output=True, text=True,
                           timeout=60, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
