"""Stand-ins for a GPU host's toolchain, so that the nccl_tests role runs on a machine without a GPU,
CUDA, NCCL, MPI or GitHub.

- ``make_fake_repo``: a git repository standing in for NVIDIA/nccl-tests. Its tags v2.19.5 and
  v2.19.6 (and a newer ``master``) hold a Makefile that records the variables it was called with
  (one JSON line per call, in ``FAKE_NCCL_TESTS_LOG``, a make or environment variable) and makes the upstream binaries' names in
  ``$(BUILDDIR)``: small C programs that include ``nccl.h`` (and ``mpi.h`` with ``MPI=1``) and link
  ``-lnccl`` (and ``-lmpi``) the way the real Makefile does, so that the role's link folder,
  runpath and ldd check are exercised for real. ``FAKE_NCCL_TESTS_SLEEP`` (seconds after each
  binary) and ``FAKE_NCCL_TESTS_FAIL_AFTER`` (fail after N binaries), make or environment
  variables, simulate long and broken builds.
- ``make_fake_cuda``: a CUDA home with a ``bin/nvcc`` that reports a chosen release.
- ``make_fake_nvidia_smi``: an ``nvidia-smi`` that lists GPUs of chosen compute capabilities for
  any ``--query-gpu`` field list.
- ``make_fake_torch_env``: a Python environment holding ``torch`` and the pip wheel's NCCL layout
  (``nvidia/nccl/include/nccl.h``, ``nvidia/nccl/lib/libnccl.so.2`` and no ``libnccl.so``).
- ``make_fake_nccl_home``: a plain NCCL folder (``include/``, ``lib/``) for a user path.
- ``make_fake_openmpi``: Debian's Open MPI layout (``usr/lib/x86_64-linux-gnu/openmpi``) and an
  ``mpicc`` (``make_fake_mpicc``, also used alone) that answers ``--showme:incdirs/libdirs/version``.

Run as a script (``python tests/roles/nccl_tests/fakes.py DIR``) to lay all of them out in DIR.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

BINARIES = [
    "all_reduce", "all_gather", "broadcast", "reduce_scatter", "reduce", "alltoall",
    "alltoallv", "scatter", "gather", "sendrecv", "hypercube",
]

CC = os.environ.get("CC", "cc")


def _write(path: Path, text: str, mode: int | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mode is not None:
        path.chmod(mode)
    return path


def _exe(path: Path, text: str) -> Path:
    return _write(path, text, 0o755)


FAKE_MAKEFILE = r"""
# Stand-in for nccl-tests' Makefile (tests/roles/nccl_tests/fakes.py): records the variables it was
# called with and makes the upstream binaries' names, linked like the real ones.
BUILDDIR ?= build
override BUILDDIR := $(abspath $(BUILDDIR))
MPI ?= 0
NAME_SUFFIX ?=
CC ?= cc
LOG := $(or $(FAKE_NCCL_TESTS_LOG),/dev/null)
VERSION := $(shell cat $(CURDIR)/VERSION)
BINS := __BINS__
ifeq ($(MPI), 1)
MPIFLAGS := -DFAKE_MPI -I$(MPI_HOME)/include -L$(MPI_HOME)/lib -lmpi
endif

.PHONY: default src.build
default: src.build

src.build:
	@printf '{"version": "%s", "NVCC_GENCODE": "%s", "MPI": "%s", "MPI_HOME": "%s", "NCCL_HOME": "%s", "CUDA_HOME": "%s", "BUILDDIR": "%s", "NAME_SUFFIX": "%s", "LD_RUN_PATH": "%s"}\n' \
	  '$(VERSION)' '$(NVCC_GENCODE)' '$(MPI)' '$(MPI_HOME)' '$(NCCL_HOME)' '$(CUDA_HOME)' '$(BUILDDIR)' '$(NAME_SUFFIX)' "$$LD_RUN_PATH" >> '$(LOG)'
	@mkdir -p $(BUILDDIR)
	@n=0; for b in $(BINS); do \
	  $(CC) -o $(BUILDDIR)/$${b}_perf$(NAME_SUFFIX) src/fake_perf.c -I$(NCCL_HOME)/include -L$(NCCL_HOME)/lib -lnccl $(MPIFLAGS) || exit 1; \
	  n=$$((n+1)); \
	  if [ -n "$(FAKE_NCCL_TESTS_FAIL_AFTER)" ] && [ $$n -ge "$(FAKE_NCCL_TESTS_FAIL_AFTER)" ]; then echo "fake build fails after $$n binaries" >&2; exit 2; fi; \
	  if [ -n "$(FAKE_NCCL_TESTS_SLEEP)" ]; then sleep $(FAKE_NCCL_TESTS_SLEEP); fi; \
	done
""".replace("__BINS__", " ".join(BINARIES))

FAKE_PERF_C = r"""
#include <stdio.h>
#include <nccl.h>
#ifdef FAKE_MPI
#include <mpi.h>
#endif
int main(void) {
  int v = 0;
#ifdef FAKE_MPI
  MPI_Init(0, 0);
#endif
  ncclGetVersion(&v);
  printf("# nccl-tests stand-in, NCCL version %d\n", v);
  return 0;
}
"""


def _git(repo: Path, *args: str) -> None:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.invalid",
               GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1")
    subprocess.run(["git", "-C", str(repo), *args], check=True, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def write_fake_tree(root: Path, version: str) -> Path:
    """The source tree of one fake nccl-tests release (what a tarball or a checkout holds)."""
    _write(root / "Makefile", FAKE_MAKEFILE.lstrip())
    _write(root / "VERSION", version + "\n")
    _write(root / "src" / "fake_perf.c", FAKE_PERF_C.lstrip())
    _write(root / "src" / "Makefile", "# upstream keeps the real rules here\n")
    _write(root / "README.md", f"nccl-tests stand-in {version}\n")
    return root


def make_fake_repo(path: Path) -> Path:
    """A git repository with tags v2.19.5, v2.19.6 and a newer master (2.20.0-dev)."""
    path.mkdir(parents=True)
    _git(path, "init", "-q", "-b", "master")
    for version in ("2.19.5", "2.19.6", "2.20.0-dev"):
        write_fake_tree(path, version)
        _git(path, "add", "-A")
        _git(path, "commit", "-q", "-m", f"NCCL_TESTS_VERSION {version}")
        if not version.endswith("-dev"):
            _git(path, "tag", f"v{version}")
    return path


def make_fake_cuda(path: Path, release: str = "13.0") -> Path:
    """A CUDA home whose bin/nvcc reports ``release``."""
    _exe(path / "bin" / "nvcc", textwrap.dedent(f"""\
        #!/bin/sh
        case "$*" in
          *--version*)
            echo "nvcc: NVIDIA (R) Cuda compiler driver"
            echo "Cuda compilation tools, release {release}, V{release}.88"
            echo "Build cuda_{release}.r{release}/compiler.0_0" ;;
          *--dryrun*) echo "#\\$ TOP=$(dirname "$0")/.." ;;
          *) echo "fake nvcc: $*" >&2; exit 1 ;;
        esac
        """))
    (path / "include").mkdir(parents=True, exist_ok=True)
    (path / "include" / "cuda_runtime.h").write_text("/* fake */\n")
    return path


def make_fake_nvidia_smi(path: Path, caps: list[str]) -> Path:
    """An nvidia-smi listing one GPU per entry of ``caps`` (e.g. ["9.0", "9.0"])."""
    return _exe(path, textwrap.dedent(f"""\
        #!/usr/bin/env python3
        import sys
        caps = {caps!r}
        query = [a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--query-gpu=")]
        if not query:
            print("fake nvidia-smi: only --query-gpu is supported", file=sys.stderr)
            sys.exit(6)
        if not caps:
            print("No devices were found")
            sys.exit(6)
        for i, cap in enumerate(caps):
            values = {{"index": str(i), "name": "NVIDIA Fake GPU sm_" + cap.replace(".", ""),
                      "compute_cap": cap, "driver_version": "580.00.00", "memory.total": "81559",
                      "pci.bus_id": "00000000:%02X:00.0" % (i + 1), "uuid": "GPU-fake-%d" % i}}
            print(", ".join(values.get(f, "[N/A]") for f in query[0].split(",")))
        """))


def _build_nccl(lib_dir: Path, include_dir: Path, version: tuple[int, int, int]) -> None:
    major, minor, patch = version
    include_dir.mkdir(parents=True, exist_ok=True)
    lib_dir.mkdir(parents=True, exist_ok=True)
    (include_dir / "nccl.h").write_text(textwrap.dedent(f"""\
        #ifndef NCCL_H_
        #define NCCL_H_
        #define NCCL_MAJOR {major}
        #define NCCL_MINOR {minor}
        #define NCCL_PATCH {patch}
        #define NCCL_SUFFIX ""
        #define NCCL_VERSION_CODE {major * 10000 + minor * 100 + patch}
        int ncclGetVersion(int *version);
        #endif
        """))
    src = lib_dir / "nccl_fake.c"
    src.write_text(f"int ncclGetVersion(int *v) {{ *v = {major * 10000 + minor * 100 + patch}; return 0; }}\n")
    subprocess.run([CC, "-shared", "-fPIC", "-Wl,-soname,libnccl.so.2", "-o",
                    str(lib_dir / "libnccl.so.2"), str(src)], check=True)
    src.unlink()


def make_fake_torch_env(path: Path, nccl_version=(2, 28, 3)) -> Path:
    """A Python environment with torch and NCCL as the pip wheel lays it out; returns its python."""
    site = path / "lib" / "python3" / "site-packages"
    _write(site / "torch" / "__init__.py", "__version__ = '0.0.0+fake'\n")
    _build_nccl(site / "nvidia" / "nccl" / "lib", site / "nvidia" / "nccl" / "include", nccl_version)
    (site / "nvidia" / "nccl" / "__init__.py").write_text("")
    return _exe(path / "bin" / "python3",
                f'#!/bin/sh\nPYTHONPATH="{site}" exec "{sys.executable}" "$@"\n')


def make_fake_nccl_home(path: Path, nccl_version=(2, 27, 7), dev_link: bool = True) -> Path:
    """A plain NCCL folder: include/nccl.h, lib/libnccl.so.2 (and the libnccl.so link)."""
    _build_nccl(path / "lib", path / "include", nccl_version)
    if dev_link:
        (path / "lib" / "libnccl.so").symlink_to("libnccl.so.2")
    return path


def make_fake_openmpi(root: Path) -> tuple[Path, Path]:
    """Debian's Open MPI layout under ``root``; returns (its home, a bin folder holding mpicc)."""
    home = root / "usr" / "lib" / "x86_64-linux-gnu" / "openmpi"
    (home / "include" / "openmpi").mkdir(parents=True)
    (home / "include" / "mpi.h").write_text("int MPI_Init(int *argc, char ***argv);\n")
    lib = home / "lib"
    lib.mkdir(parents=True)
    src = lib / "mpi_fake.c"
    src.write_text("int MPI_Init(int *argc, char ***argv) { return 0; }\n")
    subprocess.run([CC, "-shared", "-fPIC", "-Wl,-soname,libmpi.so.40", "-o",
                    str(lib / "libmpi.so.40.30.4"), str(src)], check=True)
    src.unlink()
    (lib / "libmpi.so.40").symlink_to("libmpi.so.40.30.4")
    (lib / "libmpi.so").symlink_to("libmpi.so.40.30.4")
    bindir = root / "usr" / "bin"
    make_fake_mpicc(bindir / "mpicc", home)
    return home, bindir


def make_fake_mpicc(path: Path, home: Path, version: str = "4.1.4") -> Path:
    """An Open MPI ``mpicc`` of ``home`` (Debian's layout: include/, include/openmpi/, lib/) that
    answers ``--showme:incdirs/libdirs/version`` and nothing else."""
    return _exe(path, textwrap.dedent(f"""\
        #!/bin/sh
        case "$1" in
          --showme:incdirs) echo "{home}/include {home}/include/openmpi" ;;
          --showme:libdirs) echo "{home}/lib" ;;
          --showme:version) echo "mpicc: Open MPI {version} (Language: C)" ;;
          *) echo "fake mpicc: $*" >&2; exit 1 ;;
        esac
        """))


def make_tarball(tree: Path, dest: Path, prefix: str) -> Path:
    """A release-style tarball of ``tree`` whose files sit under ``prefix/``."""
    import tarfile

    with tarfile.open(dest, "w:gz") as tar:
        tar.add(tree, arcname=prefix)
    return dest


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: fakes.py DIR", file=sys.stderr)
        return 2
    base = Path(argv[1]).resolve()
    if base.exists():
        shutil.rmtree(base)
    repo = make_fake_repo(base / "nccl-tests.git")
    cuda = make_fake_cuda(base / "cuda")
    smi = make_fake_nvidia_smi(base / "bin" / "nvidia-smi", ["9.0"])
    py = make_fake_torch_env(base / "torch-env")
    mpi_home, mpi_bin = make_fake_openmpi(base / "mpi")
    print(json.dumps({"repo": str(repo), "cuda_home": str(cuda), "nvidia_smi": str(smi),
                      "torch_python": str(py), "mpi_home": str(mpi_home),
                      "mpicc": str(mpi_bin / "mpicc")}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
