"""The nccl_tests role against stand-ins (no GPU, no CUDA, no GitHub): connection local, one
inventory host per scenario so that one playbook run covers them all.

Scenarios (hosts):
- git_pin:        git source at the default pin (v2.19.6; the fake repository's master is newer),
                  a mixed sm_80/sm_90 box, Debian-layout Open MPI through mpicc, PyTorch's NCCL
                  (pip wheel: libnccl.so.2 only) chosen over a user NCCL folder.
- git_old:        git at v2.19.5, CUDA 12.4, one sm_86 GPU, no PTX, no MPI, a user NCCL folder.
- archive:        a release tarball by URL with its sha256, MPI found in a candidate folder,
                  a user-given NVCC_GENCODE.
- ctl_dir:        a source folder on the controller, NAME_SUFFIX through nccl_tests_make_vars.
- ctl_tar:        a release tarball on the controller.
- no_gpu:         nvidia-smi missing: skipped with one line, nothing installed.
- no_gpu_strict:  nvidia-smi lists no GPU and nccl_tests_required: fails clearly.
- too_old:        an sm_70 GPU with CUDA 13.0 (which builds sm_75 and newer): fails clearly.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from .conftest import REPO_ROOT, ansible_argv, ansible_env, host_vars, make_calls, run_role, write_inventory

BINARIES = ["all_reduce_perf", "all_gather_perf", "broadcast_perf", "reduce_scatter_perf",
            "reduce_perf", "alltoall_perf", "alltoallv_perf", "scatter_perf", "gather_perf",
            "sendrecv_perf", "hypercube_perf"]
OK_HOSTS = ["git_pin", "git_old", "archive", "ctl_dir", "ctl_tar", "no_gpu"]
BUILD_HOSTS = ["git_pin", "git_old", "archive", "ctl_dir", "ctl_tar"]
FAIL_HOSTS = ["no_gpu_strict", "too_old"]


def install_dir(root: Path, host: str) -> Path:
    return root / host / "opt" / "ncclkit" / "nccl-tests"


def kill_tree(pid: int) -> None:
    """SIGKILL a process and all its descendants (ansible's workers start their own sessions, so a
    process-group kill would leave the running build behind): an interruption like a lost host."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    tree, todo = [], [pid]
    while todo:
        p = todo.pop()
        tree.append(p)
        todo.extend(children.get(p, []))
    for p in tree:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


def ldd_nccl(binary: Path) -> Path:
    out = subprocess.run(["ldd", str(binary)], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0].startswith("libnccl.so") and len(parts) > 2:
            return Path(parts[2]).resolve()
    raise AssertionError(f"{binary} does not link libnccl:\n{out}")


@pytest.fixture(scope="module")
def matrix(toolchain, tmp_path_factory):
    """Runs the scenarios in check mode, for real, again (the stamp), and in check mode again."""
    fk = toolchain
    root = tmp_path_factory.mktemp("nccl_tests_matrix")
    hosts = {
        "git_pin": host_vars(
            fk, root, "git_pin",
            nccl_preflight_nvidia_smi=str(fk.smi["h100x3"]),
            nccl_preflight_mpicc=str(fk.mpicc),
            nccl_preflight_nccl_home=str(fk.nccl_home)),
        "git_old": host_vars(
            fk, root, "git_old",
            nccl_tests_version="v2.19.5",
            nccl_tests_ptx=False,
            nccl_preflight_nvidia_smi=str(fk.smi["a40"]),
            nccl_preflight_cuda_home=str(fk.cuda12),
            nccl_preflight_torch_python="/nonexistent/python3",
            nccl_preflight_nccl_source="path",
            nccl_preflight_nccl_home=str(fk.nccl_home)),
        "archive": host_vars(
            fk, root, "archive",
            nccl_tests_source="archive",
            nccl_tests_git_repo="https://github.invalid/none.git",
            nccl_tests_archive_url=fk.tarball_v2196.as_uri(),
            nccl_tests_archive_checksum=f"sha256:{fk.tarball_sha256}",
            nccl_tests_gencode="-gencode=arch=compute_90,code=sm_90",
            nccl_preflight_mpi_candidates=["/nonexistent/openmpi", str(fk.mpi_home)]),
        "ctl_dir": host_vars(
            fk, root, "ctl_dir",
            nccl_tests_source="controller",
            nccl_tests_controller_path=str(fk.tree_v2196),
            nccl_tests_make_vars=[f"FAKE_NCCL_TESTS_LOG={root / 'ctl_dir' / 'make-calls.log'}",
                                  "NAME_SUFFIX=_x"]),
        "ctl_tar": host_vars(
            fk, root, "ctl_tar",
            nccl_tests_source="controller",
            nccl_tests_controller_path=str(fk.tarball_v2196)),
        "no_gpu": host_vars(fk, root, "no_gpu", nccl_preflight_nvidia_smi="/nonexistent/nvidia-smi"),
        "no_gpu_strict": host_vars(fk, root, "no_gpu_strict",
                                   nccl_preflight_nvidia_smi=str(fk.smi["none"]),
                                   nccl_tests_required=True),
        "too_old": host_vars(fk, root, "too_old", nccl_preflight_nvidia_smi=str(fk.smi["v100"])),
    }
    inventory = write_inventory(root / "inventory.json", hosts)
    runs = {"check_fresh": run_role(inventory, check=True, limit=",".join(BUILD_HOSTS + ["too_old"]))}
    runs["check_fresh"].written = {h: install_dir(root, h).exists() or bool(make_calls(root, h))
                                   for h in BUILD_HOSTS}
    runs["first"] = run_role(inventory)
    runs["second"] = run_role(inventory)
    runs["check_again"] = run_role(inventory, check=True, limit="git_pin,ctl_tar")
    for name, run in runs.items():  # for a look after a failure
        (root / f"{name}.log").write_text(run.output)
    return root, fk, runs


def test_check_mode_on_a_fresh_host_changes_nothing(matrix):
    root, dummy, runs = matrix
    run = runs["check_fresh"]
    for host in BUILD_HOSTS:
        assert run.counts(host)["failed"] == 0, run.output[-4000:]
        assert run.counts(host)["changed"] > 0, f"{host}: check mode should report the build"
        assert not run.written[host], f"{host}: check mode wrote {install_dir(root, host)} or built"
    assert run.counts("too_old")["failed"] == 1


def test_first_run_builds_each_source_kind(matrix):
    root, fk, runs = matrix
    run = runs["first"]
    for host in OK_HOSTS:
        assert run.counts(host)["failed"] == 0, f"{host} failed:\n{run.output[-6000:]}"
    for host in BUILD_HOSTS:
        calls = make_calls(root, host)
        assert len(calls) == 1, f"{host}: {calls}"
        fact = runs["first"].facts[host]["ncclkit_nccl_tests"]
        assert fact["available"] is True and fact["built"] is True
        suffix = "_x" if host == "ctl_dir" else ""
        current = install_dir(root, host) / "current"
        assert current.is_symlink()
        names = sorted(p.name for p in (current / "bin").iterdir())
        assert names == sorted(b + suffix for b in BINARIES), host
        assert (current / "ncclkit-stamp.json").is_file()
        assert fact["bin_dir"] == str(current / "bin")
        assert fact["binaries"][0] == str(current / "bin" / ("all_reduce_perf" + suffix))
        # no temporary build folders are left behind
        assert not list(install_dir(root, host).glob(".build-*"))
    assert make_calls(root, "git_pin")[0]["version"] == "2.19.6"  # the pin, not master
    assert make_calls(root, "git_old")[0]["version"] == "2.19.5"
    assert make_calls(root, "archive")[0]["version"] == "2.19.6"
    assert make_calls(root, "ctl_dir")[0]["version"] == "2.19.6"
    assert make_calls(root, "ctl_tar")[0]["version"] == "2.19.6"
    assert runs["first"].facts["archive"]["ncclkit_nccl_tests"]["source"] == "archive"


def test_gencode_comes_from_the_reported_capabilities(matrix):
    root, dummy, runs = matrix
    pin = make_calls(root, "git_pin")[0]
    assert pin["NVCC_GENCODE"] == ("-gencode=arch=compute_80,code=sm_80 "
                                   "-gencode=arch=compute_90,code=sm_90 "
                                   "-gencode=arch=compute_90,code=compute_90")
    assert runs["first"].facts["git_pin"]["ncclkit_gpu_capabilities"]["sm"] == [80, 90]
    assert runs["first"].facts["git_pin"]["ncclkit_nccl_tests"]["gencode"] == pin["NVCC_GENCODE"]
    # CUDA 12.4, one sm_86, PTX off
    assert make_calls(root, "git_old")[0]["NVCC_GENCODE"] == "-gencode=arch=compute_86,code=sm_86"
    assert runs["first"].facts["git_old"]["ncclkit_cuda"]["version"] == "12.4"
    # a user-given gencode is used as it is
    assert make_calls(root, "archive")[0]["NVCC_GENCODE"] == "-gencode=arch=compute_90,code=sm_90"
    assert make_calls(root, "ctl_tar")[0]["NVCC_GENCODE"] == (
        "-gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_90,code=compute_90")


def test_mpi_is_detected_and_used(matrix):
    root, fk, runs = matrix
    pin = make_calls(root, "git_pin")[0]
    assert pin["MPI"] == "1"
    mpi = runs["first"].facts["git_pin"]["ncclkit_mpi"]
    assert mpi["found"] and mpi["home"] == str(fk.mpi_home) and mpi["version"] == "4.1.4"
    assert mpi["mpicc"] == str(fk.mpicc)
    # MPI_HOME is a link folder whose include/ and lib/ point at Debian's split layout
    assert Path(pin["MPI_HOME"]).name == "mpi_home"
    archive = make_calls(root, "archive")[0]
    assert archive["MPI"] == "1"
    assert runs["first"].facts["archive"]["ncclkit_mpi"]["home"] == str(fk.mpi_home)
    assert runs["first"].facts["archive"]["ncclkit_nccl_tests"]["mpi"] is True
    # no MPI anywhere: MPI=0
    assert make_calls(root, "git_old")[0]["MPI"] == "0"
    assert runs["first"].facts["git_old"]["ncclkit_mpi"]["found"] is False
    assert "libopenmpi-dev" in runs["first"].facts["git_old"]["ncclkit_mpi"]["hint"]
    assert runs["first"].facts["git_old"]["ncclkit_nccl_tests"]["mpi"] is False


def test_binaries_load_the_nccl_found(matrix):
    root, fk, runs = matrix
    # PyTorch's NCCL (pip wheel: no libnccl.so) wins over a user folder in auto mode
    nccl = runs["first"].facts["git_pin"]["ncclkit_nccl"]
    assert nccl["source"] == "torch" and nccl["version"] == "2.28.3"
    assert Path(nccl["library"]) == fk.torch_nccl_library.resolve()
    assert not (fk.torch_nccl_library.parent / "libnccl.so").exists()
    for binary in (install_dir(root, "git_pin") / "current" / "bin").iterdir():
        assert ldd_nccl(binary) == fk.torch_nccl_library.resolve()
    assert fk.torch_nccl_library.parent.as_posix() in make_calls(root, "git_pin")[0]["LD_RUN_PATH"]
    fact = runs["first"].facts["git_pin"]["ncclkit_nccl_tests"]
    assert fact["nccl_version"] == "2.28.3" and fact["nccl_source"] == "torch"
    # a user path (mode path)
    old = runs["first"].facts["git_old"]["ncclkit_nccl"]
    assert old["source"] == "path" and old["version"] == "2.27.7"
    assert ldd_nccl(install_dir(root, "git_old") / "current" / "bin" / "all_reduce_perf") == \
        (fk.nccl_home / "lib" / "libnccl.so.2").resolve()


def test_second_run_compiles_nothing(matrix):
    root, dummy, runs = matrix
    for name in ("second", "check_again"):
        run = runs[name]
        for host in OK_HOSTS if name == "second" else ["git_pin", "ctl_tar"]:
            counts = run.counts(host)
            assert counts["failed"] == 0 and counts["changed"] == 0, \
                f"{name}: {host} {counts}\n{run.output[-6000:]}"
    for host in BUILD_HOSTS:
        assert len(make_calls(root, host)) == 1, host
        assert runs["second"].facts[host]["ncclkit_nccl_tests"]["built"] is False
        assert len(list((install_dir(root, host) / "builds").iterdir())) == 1


def test_no_gpu_host_is_skipped_with_one_line(matrix):
    root, dummy, runs = matrix
    out = runs["first"].output
    assert "nccl_tests: skipped on no_gpu: no GPU (/nonexistent/nvidia-smi not found" in out
    assert not install_dir(root, "no_gpu").exists()
    assert runs["first"].facts["no_gpu"]["ncclkit_nccl_tests"]["available"] is False
    assert runs["first"].counts("no_gpu")["changed"] == 0


def test_failures_are_clear_and_install_nothing(matrix):
    root, dummy, runs = matrix
    out = runs["first"].output
    for host in FAIL_HOSTS:
        assert runs["first"].counts(host)["failed"] == 1, host
        assert not (install_dir(root, host) / "current").exists(), host
        builds = install_dir(root, host) / "builds"
        assert not builds.exists() or not list(builds.iterdir()), host
    assert "no_gpu_strict cannot build nccl-tests: no GPU" in out and "nccl_tests_required is true" in out
    assert "CUDA 13.0" in out and "sm_75 and newer" in out and "sm_70" in out


def test_interrupted_build_leaves_no_half_install(toolchain, tmp_path):
    """Kill the play mid-build: nothing is installed; the next run removes the leftover and
    completes. A failed rebuild then leaves the build in use untouched."""
    fk = toolchain
    host = "interrupted"
    slow = host_vars(fk, tmp_path, host)
    slow["nccl_tests_make_vars"] = slow["nccl_tests_make_vars"] + ["FAKE_NCCL_TESTS_SLEEP=0.5"]
    inventory = write_inventory(tmp_path / "slow.json", {host: slow})
    target = install_dir(tmp_path, host)
    proc = subprocess.Popen(ansible_argv(inventory), cwd=REPO_ROOT, env=ansible_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            built = list(target.glob(".build-*/build/*_perf"))
            if len(built) >= 2:
                break
            if proc.poll() is not None:
                raise AssertionError("the play ended before it was killed:\n" + proc.stdout.read())
            time.sleep(0.1)
        else:
            raise AssertionError("the build never started")
    finally:
        kill_tree(proc.pid)
        proc.wait()
    time.sleep(1)  # nothing of the killed build may still be writing
    assert list(target.glob(".build-*"))  # the half build is in its temporary folder...
    assert not (target / "current").exists()  # ...and nowhere else
    assert not list((target / "builds").iterdir())

    # The next run removes the leftover and builds the whole set.
    inventory = write_inventory(tmp_path / "fast.json", {host: host_vars(fk, tmp_path, host)})
    run = run_role(inventory)
    assert run.counts(host)["failed"] == 0, run.output[-4000:]
    assert not list(target.glob(".build-*"))
    assert sorted(p.name for p in (target / "current" / "bin").iterdir()) == sorted(BINARIES)
    good = (target / "current").resolve()

    # A rebuild (another version) that fails leaves the build in use as it was.
    broken = host_vars(fk, tmp_path, host, nccl_tests_version="v2.19.5")
    broken["nccl_tests_make_vars"] = broken["nccl_tests_make_vars"] + ["FAKE_NCCL_TESTS_FAIL_AFTER=3"]
    run = run_role(write_inventory(tmp_path / "broken.json", {host: broken}))
    assert run.counts(host)["failed"] == 1
    assert "fake build fails after 3 binaries" in run.output
    assert (target / "current").resolve() == good
    assert sorted(p.name for p in (target / "current" / "bin").iterdir()) == sorted(BINARIES)
    assert [p.name for p in (target / "builds").iterdir()] == [good.name]


def test_only_what_the_role_made_is_removed_and_system_folders_are_refused(toolchain, tmp_path):
    """The role's old source (stamped as a run of the role stamps it) goes; someone's src/keepme, an
    unstamped tarball and a build without the role's stamp stay. /usr/local as the install folder
    is refused before anything is touched: that run is in check mode, so that even a role that
    failed to refuse could not change this machine's real /usr/local."""
    fk = toolchain
    host = "owned"
    target = install_dir(tmp_path, host)
    (target / "src" / "keepme").mkdir(parents=True)
    (target / "src" / "keepme" / "notes.txt").write_text("not the role's")
    (target / "src" / "mine.tar.gz").write_text("not the role's either")
    (target / "builds" / "by-hand" / "bin").mkdir(parents=True)
    old = target / "src" / "archive-v2.19.5-0123456789ab"  # what an earlier archive run left
    (old / "nccl-tests-2.19.5").mkdir(parents=True)
    (target / "src" / (old.name + ".download")).write_text("tarball")
    (target / "src" / (old.name + ".ncclkit")).write_text("Made by ncclkit.cluster.nccl_tests\n")
    run = run_role(write_inventory(tmp_path / "inventory.json", {host: host_vars(fk, tmp_path, host)}))
    assert run.counts(host)["failed"] == 0, run.output[-4000:]
    assert sorted(p.name for p in (target / "src").iterdir()) == ["git", "git.ncclkit", "keepme", "mine.tar.gz"]
    assert (target / "src" / "keepme" / "notes.txt").read_text() == "not the role's"
    assert sorted(p.name for p in (target / "builds").iterdir()) == sorted(
        ["by-hand", (target / "current").resolve().name])
    system = host_vars(fk, tmp_path, "system", nccl_tests_install_dir="/usr/local")
    run = run_role(write_inventory(tmp_path / "system.json", {"system": system}), check=True)
    assert run.counts("system")["failed"] == 1 and run.counts("system")["changed"] == 0
    assert "nccl_tests_install_dir /usr/local is a system folder" in run.output
    assert "use a dedicated subfolder such as /usr/local/ncclkit/nccl-tests" in run.output
