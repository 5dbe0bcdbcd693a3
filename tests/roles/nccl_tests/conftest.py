"""Fixtures for the nccl_tests role's tests: stand-ins for the GPU toolchain (fakes.py) and a
runner for the role against this machine (connection local, every path under a temporary root).

These tests use `connection: local` with the role's install-path variables pointing into a
temporary folder, not the lab cluster: the role builds per host and needs no network between hosts.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from lab_playbook import play

from . import fakes

REPO_ROOT = Path(__file__).resolve().parents[3]
PLAYBOOK = Path(__file__).with_name("playbook.yml")


def _ansible_playbook() -> str:
    here = Path(sys.executable).with_name("ansible-playbook")
    if here.exists():
        return str(here)
    found = shutil.which("ansible-playbook")
    if not found:
        pytest.skip("ansible-playbook is not installed")
    return found


@dataclass
class Run:
    rc: int
    output: str
    recap: dict[str, dict[str, int]] = field(default_factory=dict)
    written: dict[str, bool] = field(default_factory=dict)
    facts: dict[str, dict] = field(default_factory=dict)

    def counts(self, host: str) -> dict[str, int]:
        assert host in self.recap, f"{host} not in the recap:\n{self.output[-3000:]}"
        return self.recap[host]


RECAP_LINE = re.compile(r"^(\S+)\s+:\s+((?:\w+=\d+\s*)+)$")
FACTS_LINE = re.compile(r'^\s*"msg": ("NCCLKIT_FACTS .*")\s*$')


def parse_facts(output: str) -> dict[str, dict]:
    found = {}
    for line in output.splitlines():
        m = FACTS_LINE.match(line)
        if m:
            dummy, host, data = json.loads(m.group(1)).split(" ", 2)
            found[host] = json.loads(data)
    return found


def parse_recap(output: str) -> dict[str, dict[str, int]]:
    recap: dict[str, dict[str, int]] = {}
    in_recap = False
    for line in output.splitlines():
        if line.startswith("PLAY RECAP"):
            in_recap = True
            continue
        m = RECAP_LINE.match(line.strip()) if in_recap else None
        if m:
            recap[m.group(1)] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
    return recap


def write_inventory(path: Path, hosts: dict[str, dict]) -> Path:
    inventory = {"all": {"hosts": {
        name: {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, **hostvars}
        for name, hostvars in hosts.items()
    }}}
    path.write_text(json.dumps(inventory, indent=2))
    return path


def ansible_argv(inventory: Path) -> list[str]:
    """The role's playbook as a command, for the one test that kills it mid-run (lab_playbook.play
    waits for the end)."""
    return [_ansible_playbook(), "-i", str(inventory), str(PLAYBOOK)]


def ansible_env(**more: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "ANSIBLE_FORCE_COLOR": "0",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_STDOUT_CALLBACK": "default",
        "ANSIBLE_CALLBACK_RESULT_FORMAT": "json",
        "ANSIBLE_HOST_KEY_CHECKING": "0",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
        "PYTHONUNBUFFERED": "1",
        "LC_ALL": "C.UTF-8",
    })
    env.pop("FAKE_NCCL_TESTS_LOG", None)
    env.update(more)
    return env


def run_role(inventory: Path, check: bool = False, limit: str | None = None, timeout: int = 300,
             **env: str) -> Run:
    args = (*(["--check"] if check else []), *(["--limit", limit] if limit else []))
    done = play(inventory, str(PLAYBOOK), env=ansible_env(**env), args=args, timeout=timeout)
    return Run(done.rc, done.stdout, parse_recap(done.stdout), facts=parse_facts(done.stdout))


@dataclass
class Fakes:
    base: Path
    repo: Path
    cuda13: Path
    cuda12: Path
    torch_python: Path
    nccl_home: Path
    mpi_home: Path
    mpicc: Path
    smi: dict[str, Path]
    tree_v2196: Path
    tarball_v2196: Path
    tarball_sha256: str

    @property
    def torch_nccl_library(self) -> Path:
        return (self.torch_python.parent.parent / "lib" / "python3" / "site-packages"
                / "nvidia" / "nccl" / "lib" / "libnccl.so.2")


@pytest.fixture(scope="session")
def toolchain(tmp_path_factory) -> Fakes:
    """All the stand-ins, made once per session (the shared libraries are compiled with cc)."""
    if not shutil.which("git") or not shutil.which("make") or not shutil.which(fakes.CC):
        pytest.skip("needs git, make and a C compiler")
    import hashlib

    base = tmp_path_factory.mktemp("nccl_tests_fakes")
    gpus = {
        "h100x3": ["9.0", "8.0", "9.0"],  # mixed box: sm_80 and sm_90
        "a40": ["8.6"],
        "h200": ["9.0"],
        "v100": ["7.0"],
        "none": [],
    }
    smi = {name: fakes.make_fake_nvidia_smi(base / "smi" / name / "nvidia-smi", caps)
           for name, caps in gpus.items()}
    tree = fakes.write_fake_tree(base / "trees" / "v2.19.6", "2.19.6")
    tarball = fakes.make_tarball(tree, base / "nccl-tests-2.19.6.tar.gz", "nccl-tests-2.19.6")
    mpi_home, mpi_bin = fakes.make_fake_openmpi(base / "mpi")
    return Fakes(
        base=base,
        repo=fakes.make_fake_repo(base / "nccl-tests.git"),
        cuda13=fakes.make_fake_cuda(base / "cuda-13.0", "13.0"),
        cuda12=fakes.make_fake_cuda(base / "cuda-12.4", "12.4"),
        torch_python=fakes.make_fake_torch_env(base / "torch-env", (2, 28, 3)),
        nccl_home=fakes.make_fake_nccl_home(base / "nccl-2.27.7", (2, 27, 7)),
        mpi_home=mpi_home,
        mpicc=mpi_bin / "mpicc",
        smi=smi,
        tree_v2196=tree,
        tarball_v2196=tarball,
        tarball_sha256=hashlib.sha256(tarball.read_bytes()).hexdigest(),
    )


def host_vars(fk: Fakes, root: Path, name: str, **over) -> dict:
    """Variables for one test host: everything under root/name, git from the fake repository,
    CUDA 13.0, PyTorch's NCCL, no MPI, one H200; ``over`` changes any of them."""
    hostdir = root / name
    hostdir.mkdir(parents=True, exist_ok=True)
    hv = {
        "nccl_tests_install_dir": str(hostdir / "opt" / "ncclkit" / "nccl-tests"),
        "nccl_tests_git_repo": str(fk.repo),
        "nccl_tests_make_vars": [f"FAKE_NCCL_TESTS_LOG={hostdir / 'make-calls.log'}"],
        "nccl_tests_install_packages": False,
        "nccl_preflight_nvidia_smi": str(fk.smi["h200"]),
        "nccl_preflight_cuda_home": str(fk.cuda13),
        "nccl_preflight_torch_python": str(fk.torch_python),
        "nccl_preflight_mpicc": "/nonexistent/mpicc",
        "nccl_preflight_mpi_candidates": [],
    }
    hv.update(over)
    return hv


def make_calls(root: Path, name: str) -> list[dict]:
    log = root / name / "make-calls.log"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
