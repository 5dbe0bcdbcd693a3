"""The collection builds clean, installs with the Python package, and resolves from a checkout."""

import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

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


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    folder = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", folder,
                    REPO_ROOT], check=True, capture_output=True)
    (built,) = folder.glob("ncclkit-*.whl")
    return built


def test_wheel_carries_the_command_and_the_collection(wheel):
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


# What the installed command uses, asked in a fresh Python: the --version line, the file the
# command's own import of the collection came from, and what ansible-playbook will be told.
_WHICH_COPY = """
import contextlib, io, json, os
from ncclkit import cli
out = io.StringIO()
with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
    cli.build_parser().parse_args(["--version"])
from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis import log
print(json.dumps({"version": out.getvalue().strip(), "log": log.__file__,
                  "collections_path": os.environ["ANSIBLE_COLLECTIONS_PATH"].split(os.pathsep)}))
"""


def _which_copy(site, cwd):
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(site), "HOME": str(cwd)}
    done = subprocess.run([sys.executable, "-c", _WHICH_COPY], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_installed_command_uses_its_own_collection_outside_a_checkout(wheel, tmp_path):
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", site, wheel],
                   check=True, capture_output=True)
    elsewhere = tmp_path / "work"
    elsewhere.mkdir()
    seen = _which_copy(site, elsewhere)
    installed = (site / "ansible_collections" / "ncclkit" / "cluster").resolve()
    assert seen["version"] == f"ncclkit 0.1.0 (collection ncclkit.cluster 0.1.0: {installed})"
    assert seen["log"].startswith(str(installed / "plugins"))
    assert seen["collections_path"][0] == str(site.resolve())


def test_the_installed_command_inside_a_checkout_uses_the_checkout(wheel, tmp_path):
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", site, wheel],
                   check=True, capture_output=True)
    seen = _which_copy(site, REPO_ROOT / "docs")
    assert seen["version"] == f"ncclkit 0.1.0 (collection ncclkit.cluster 0.1.0: {REPO_ROOT})"
    assert Path(seen["log"]).resolve().is_relative_to(REPO_ROOT / "plugins")
    assert seen["log"].startswith(str(REPO_ROOT / "collections"))
    assert seen["collections_path"][0] == str(REPO_ROOT / "collections")
