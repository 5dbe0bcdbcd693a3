"""The collection builds clean, installs with the Python package, and resolves from a checkout."""

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

from conftest import REPO_ROOT

BIN = Path(sys.executable).parent
ROLES = ("nccl_preflight", "nccl_network", "nccl_tests", "nccl_profile", "nccl_validate",
         "cloud_aws", "cloud_alibaba", "cloud_autodl")
# Top-level folders and files that are not the collection, and caches anywhere.
NOT_SHIPPED_TOP = {"tests", "molecule", "src", ".venv", "collections", ".git", ".ci", "third_party",
                   ".pytest_cache", ".hypothesis", "pyproject.toml", "Makefile"}
CACHES = ("__pycache__", ".pyc")


def _plain_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "MOLECULE_"))}
    env["PATH"] = f"{BIN}:{env.get('PATH', '')}"
    return env


def test_galaxy_build_holds_the_collection_and_no_tests_or_caches(tmp_path):
    subprocess.run([BIN / "ansible-galaxy", "collection", "build", "--output-path", tmp_path],
                   cwd=REPO_ROOT, check=True, capture_output=True, env=_plain_env())
    (tarball,) = tmp_path.glob("ncclkit-cluster-0.1.0.tar.gz")
    names = tarfile.open(tarball).getnames()
    for role in ROLES:
        assert f"roles/{role}/meta/argument_specs.yml" in names
    assert "plugins/filter/network.py" in names and "meta/runtime.yml" in names
    assert "playbooks/site.yml" in names and "MANIFEST.json" in names
    leaked = [name for name in names
              if name.split("/")[0] in NOT_SHIPPED_TOP or any(c in name for c in CACHES)
              or name == "inventories/lab/hosts.yml"]
    assert leaked == []


def test_wheel_carries_the_command_and_the_collection(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", tmp_path,
                    REPO_ROOT], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("ncclkit-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "ncclkit/cli.py" in names
    prefix = "ansible_collections/ncclkit/cluster/"
    for role in ROLES:
        assert f"{prefix}roles/{role}/tasks/main.yml" in names
    assert f"{prefix}galaxy.yml" in names and f"{prefix}playbooks/site.yml" in names
    entry_points = zipfile.ZipFile(wheel).read(
        next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "ncclkit = ncclkit.cli:main" in entry_points


def test_site_yml_resolves_ncclkit_cluster_from_a_plain_checkout():
    result = subprocess.run(
        [BIN / "ansible-playbook", "--syntax-check", "-i", "localhost,", "site.yml"],
        cwd=REPO_ROOT, capture_output=True, text=True, env=_plain_env(), check=False)
    assert result.returncode == 0, result.stderr
    listed = subprocess.run(
        [BIN / "ansible-galaxy", "collection", "list", "ncclkit.cluster", "--format", "json"],
        cwd=REPO_ROOT, capture_output=True, text=True, env=_plain_env(), check=True).stdout
    assert str(REPO_ROOT / "collections" / "ansible_collections") in listed
