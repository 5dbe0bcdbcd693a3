"""The nccl_tests role over SSH on the lab cluster (index 80): a node with a stand-in GPU builds
into its own /opt (the role's default install folder), a node without one is skipped with one
line, and a second run changes nothing. Marked `lab` (needs root; about a minute)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from lab_indices import lab_index
from lab_playbook import Played, lab_cluster, play

from . import fakes
from .conftest import PLAYBOOK, ansible_env, parse_facts, parse_recap

INDEX = lab_index(__file__)
INSTALL = "/opt/ncclkit/nccl-tests"

pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(os.geteuid() != 0, reason="the lab cluster needs root"),
]


@pytest.fixture(scope="module")
def lab_fakes():
    # Not under /tmp: each lab node has its own tmpfs there. Made before `lab up`, so that the
    # nodes' overlays of /var show it.
    base = Path(tempfile.mkdtemp(prefix="ncclkit-nccl-tests-lab-", dir="/var/tmp"))
    yield {
        "repo": fakes.make_fake_repo(base / "nccl-tests.git"),
        "cuda": fakes.make_fake_cuda(base / "cuda-13.0"),
        "smi_gpu": fakes.make_fake_nvidia_smi(base / "smi-h200" / "nvidia-smi", ["9.0"]),
        "smi_none": fakes.make_fake_nvidia_smi(base / "smi-none" / "nvidia-smi", []),
        "python": fakes.make_fake_torch_env(base / "torch-env"),
        "base": base,
    }
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def lab(lab_fakes, tmp_path_factory):
    for lab in lab_cluster(INDEX, tmp_path_factory.mktemp(f"lab{INDEX}"), nodes=2):
        yield lab, lab.inventory_path


def run(lab_inventory: Path, extra: Path) -> Played:
    return play(lab_inventory, str(PLAYBOOK), env=ansible_env(), args=("-i", str(extra)), timeout=300)


def test_role_on_lab_nodes(lab, lab_fakes, tmp_path):
    cluster, inventory = lab
    common = {
        "nccl_tests_git_repo": str(lab_fakes["repo"]),
        "nccl_tests_install_packages": False,
        "nccl_tests_make_vars": [f"FAKE_NCCL_TESTS_LOG={INSTALL}-make-calls.log"],
        "nccl_preflight_cuda_home": str(lab_fakes["cuda"]),
        "nccl_preflight_torch_python": str(lab_fakes["python"]),
        "nccl_preflight_mpicc": "/nonexistent/mpicc",
        "nccl_preflight_mpi_candidates": [],
    }
    extra = tmp_path / "nccl_tests_vars.json"
    extra.write_text(json.dumps({"all": {"hosts": {
        "node1": {**common, "nccl_preflight_nvidia_smi": str(lab_fakes["smi_gpu"])},
        "node2": {**common, "nccl_preflight_nvidia_smi": str(lab_fakes["smi_none"])},
    }}}))

    first = run(inventory, extra)
    out = first.stdout
    recap = parse_recap(first.stdout)
    assert recap["node1"]["failed"] == 0 and recap["node2"]["failed"] == 0, out[-5000:]
    facts = parse_facts(first.stdout)
    assert facts["node1"]["ncclkit_nccl_tests"]["available"] is True
    assert facts["node1"]["ncclkit_nccl_tests"]["bin_dir"] == f"{INSTALL}/current/bin"
    assert facts["node2"]["ncclkit_nccl_tests"]["available"] is False
    assert "nccl_tests: skipped on node2: no GPU" in out

    # The build is node1's own: not on node2, not on the machine the lab runs on.
    listing = cluster.exec("node1", ["ls", f"{INSTALL}/current/bin"], capture_output=True, text=True)
    assert "all_reduce_perf" in listing.stdout.split()
    assert cluster.exec("node2", ["test", "-e", INSTALL]).returncode != 0
    ldd = cluster.exec("node1", ["ldd", f"{INSTALL}/current/bin/all_reduce_perf"],
                       capture_output=True, text=True).stdout
    assert str(lab_fakes["base"] / "torch-env") in ldd

    second = run(inventory, extra)
    recap = parse_recap(second.stdout)
    assert recap["node1"] == {**recap["node1"], "changed": 0, "failed": 0}, second.stdout[-5000:]
    assert recap["node2"] == {**recap["node2"], "changed": 0, "failed": 0}
    calls = cluster.exec("node1", ["cat", f"{INSTALL}-make-calls.log"], capture_output=True, text=True)
    assert len(calls.stdout.splitlines()) == 1  # the second run compiled nothing
