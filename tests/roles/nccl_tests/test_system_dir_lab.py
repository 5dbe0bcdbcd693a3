"""nccl_tests on a lab node (index 175) with nccl_tests_install_dir /usr/local: the role refuses
the system folder before touching it, and a preexisting /usr/local/src/keepme survives. The node
sees /usr/local through its own overlay, so even a role that failed to refuse would change the
node's view only, never the machine's. Marked `lab` (root; about half a minute)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from lab_indices import lab_index
from lab_playbook import lab_cluster, play

from . import fakes
from .conftest import PLAYBOOK, ansible_env, parse_recap

INDEX = lab_index(__file__)

pytestmark = [pytest.mark.lab, pytest.mark.skipif(os.geteuid() != 0, reason="the lab cluster needs root")]


@pytest.fixture(scope="module")
def lab_node(tmp_path_factory):
    # Under /var/tmp, made before `lab up`: the node's overlay of /var shows it (its /tmp is its own).
    base = Path(tempfile.mkdtemp(prefix="ncclkit-system-dir-lab-", dir="/var/tmp"))
    stand_ins = {"repo": fakes.make_fake_repo(base / "nccl-tests.git"),
                 "cuda": fakes.make_fake_cuda(base / "cuda-13.0"),
                 "smi": fakes.make_fake_nvidia_smi(base / "smi-h200" / "nvidia-smi", ["9.0"]),
                 "python": fakes.make_fake_torch_env(base / "torch-env")}
    try:
        for lab in lab_cluster(INDEX, tmp_path_factory.mktemp(f"lab{INDEX}"), nodes=1):
            yield lab, lab.inventory_path, stand_ins
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_usr_local_is_refused_and_its_src_keepme_survives(lab_node, tmp_path):
    lab, inventory, stand_ins = lab_node
    made = lab.exec("node1", ["sh", "-c", "mkdir -p /usr/local/src/keepme && echo mine > /usr/local/src/keepme/notes"])
    assert made.returncode == 0
    assert not Path("/usr/local/src/keepme").exists()  # the node's own view, not the machine's
    extra = tmp_path / "vars.json"
    extra.write_text(json.dumps({"all": {"hosts": {"node1": {
        "nccl_tests_install_dir": "/usr/local",
        "nccl_tests_git_repo": str(stand_ins["repo"]),
        "nccl_tests_install_packages": False,
        "nccl_preflight_nvidia_smi": str(stand_ins["smi"]),
        "nccl_preflight_cuda_home": str(stand_ins["cuda"]),
        "nccl_preflight_torch_python": str(stand_ins["python"]),
        "nccl_preflight_mpicc": "/nonexistent/mpicc",
        "nccl_preflight_mpi_candidates": [],
    }}}}))
    done = play(inventory, str(PLAYBOOK), env=ansible_env(), args=("-i", str(extra)), timeout=300)
    out = done.stdout
    listing = lab.exec("node1", ["sh", "-c", "cat /usr/local/src/keepme/notes; ls -A /usr/local/src; "
                                             "ls -d /usr/local/builds /usr/local/current 2>&1 || true"],
                       capture_output=True, text=True)
    assert listing.stdout.splitlines()[:2] == ["mine", "keepme"], listing.stdout
    assert parse_recap(done.stdout)["node1"]["failed"] == 1, out[-4000:]
    assert "nccl_tests_install_dir /usr/local is a system folder" in out
    assert "No such file" in listing.stdout  # nothing of the role's was made there either
