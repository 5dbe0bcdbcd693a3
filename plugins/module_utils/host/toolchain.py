"""Find what a host has for building and running NCCL programs: the GPUs' compute capabilities, the
CUDA toolkit, the NCCL that PyTorch loads (else the system's, else a given folder) and Open MPI.

Pure Python (os, glob, re, shutil; commands through host.command), no Ansible: any module can call
``detect_toolchain(params)``. It only reads, and every command it runs is an argv list with a
timeout. The result holds the four facts ncclkit_gpu_capabilities, ncclkit_cuda, ncclkit_nccl and
ncclkit_mpi; a piece not found has ``found`` (``present``) false and a hint on how to get it.
"""

from __future__ import annotations

import glob
import os
import re
import shutil

from ansible_collections.ncclkit.cluster.plugins.module_utils.host import command as host_command

# Seconds one command may take; a hung driver (nvidia-smi) or a slow network file system must not
# stall the play.
TIMEOUT_S = 60
TIMED_OUT = host_command.TIMED_OUT

DEFAULTS = {
    "cuda_home": "",
    "nccl_source": "auto",
    "nccl_home": "",
    "torch_python": "",
    "torch_python_candidates": ["python3", "/opt/conda/bin/python3", "/root/miniconda3/bin/python3"],
    "mpi_home": "",
    "mpicc": "mpicc",
    "mpi_candidates": [
        "/usr/lib/x86_64-linux-gnu/openmpi",
        "/usr/lib/aarch64-linux-gnu/openmpi",
        "/usr/lib64/openmpi",
        "/opt/hpcx/ompi",
        "/opt/amazon/openmpi",
        "/usr/mpi/gcc/openmpi-*",
        "/usr/local/mpi",
        "/usr/local/openmpi",
    ],
    "nvidia_smi": "nvidia-smi",
    "gpus": None,
    "gpu_absent_reason": "",
}
NCCL_SOURCES = ("auto", "torch", "system", "path")

# The argument spec of the options that say where to look (all but the GPU ones): nccl_toolchain
# takes them, and nccl_host_survey takes them as its `toolchain` suboptions.
SEARCH_OPTIONS = {
    "cuda_home": {"type": "str", "default": DEFAULTS["cuda_home"]},
    "nccl_source": {"type": "str", "default": DEFAULTS["nccl_source"], "choices": list(NCCL_SOURCES)},
    "nccl_home": {"type": "str", "default": DEFAULTS["nccl_home"]},
    "torch_python": {"type": "str", "default": DEFAULTS["torch_python"]},
    "torch_python_candidates": {"type": "list", "elements": "str", "default": DEFAULTS["torch_python_candidates"]},
    "mpi_home": {"type": "str", "default": DEFAULTS["mpi_home"]},
    "mpicc": {"type": "str", "default": DEFAULTS["mpicc"]},
    "mpi_candidates": {"type": "list", "elements": "str", "default": DEFAULTS["mpi_candidates"]},
}

# Where a CUDA toolkit is looked for after $CUDA_HOME and PATH (globs expanded, in order).
CUDA_NVCC_FALLBACKS = ["/usr/local/cuda/bin/nvcc", "/usr/local/cuda-*/bin/nvcc", "/usr/bin/nvcc"]
# The system's NCCL (libnccl-dev): the header folders, then the library folders.
SYSTEM_NCCL_INCLUDE_DIRS = ["/usr/include", "/usr/local/include", "/usr/local/cuda/include"]
SYSTEM_NCCL_LIB_DIRS = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64",
                        "/usr/lib", "/usr/local/lib", "/usr/local/cuda/lib64"]

CUDA_HINT = ("no nvcc found (looked at $CUDA_HOME, PATH, /usr/local/cuda*): install the CUDA toolkit "
             "(NVIDIA repository package cuda-toolkit-13-0 or cuda-toolkit-12-x) or set "
             "nccl_preflight_cuda_home to its folder")
NCCL_HINT = ("no NCCL with a header (nccl.h) found (mode {mode}): install PyTorch with its nvidia-nccl "
             "wheel in the training environment (and set nccl_preflight_torch_python to its python), "
             "or the system package libnccl-dev, or set nccl_preflight_nccl_home to a folder with "
             "include/nccl.h and lib/libnccl.so*")
MPI_HINT = ("no MPI found (mpicc on PATH, /usr/lib/x86_64-linux-gnu/openmpi, /opt/hpcx/ompi, ...): "
            "install Open MPI (apt-get install libopenmpi-dev openmpi-bin) or set "
            "nccl_preflight_mpi_home to a folder with include/mpi.h and lib/libmpi.so")

# Run by each candidate python: prints the nvidia/<pkg> folder holding include/nccl.h and
# lib/libnccl.so* beside torch (or elsewhere on its sys.path), then sys.executable. find_spec does
# not import torch, so this takes a python start, not a CUDA initialisation.
TORCH_NCCL_SCRIPT = r"""
import glob, importlib.util, os, sys
spec = importlib.util.find_spec("torch")
if spec is None or not spec.origin:
    sys.exit(3)
site = os.path.dirname(os.path.dirname(spec.origin))
for root in [site] + [p for p in sys.path if p and p != site]:
    heads = sorted(glob.glob(os.path.join(root, "nvidia", "nccl", "include", "nccl.h")))
    heads += sorted(glob.glob(os.path.join(root, "nvidia", "*", "include", "nccl.h")))
    for head in heads:
        home = os.path.dirname(os.path.dirname(head))
        if glob.glob(os.path.join(home, "lib", "libnccl.so*")):
            print(home)
            print(sys.executable)
            sys.exit(0)
sys.exit(4)
"""

_NVCC_RELEASE = re.compile(r".*release ([0-9][0-9.]*),")
_NVCC_TOP = re.compile(r"^#\$ TOP=(.*)$")
_OPEN_MPI_VERSION = re.compile(r".*Open MPI ([0-9][0-9.a-z]*)")
_OMPI_INFO_VERSION = re.compile(r".*v([0-9][0-9.]*)")
_GPU_CAP = re.compile(r"^[0-9]+\.[0-9]+$")
_GLOB_CHARS = re.compile(r"[*?[]")


def run_command(argv, timeout=TIMEOUT_S, stdin_text=None, merge_stderr=False):
    """host.command.run_command's (exit status, stdout), stderr dropped unless merged: what the
    search reads. 127 not found, 126 not runnable, 124 stopped at the timeout with what it printed."""
    rc, out, dummy = host_command.run_command(argv, timeout, data=stdin_text, merge_stderr=merge_stderr)
    return rc, out


def detect_toolchain(params, run=run_command):
    """The four toolchain facts for this host. ``params`` takes the names of DEFAULTS (missing ones
    take their default); ``run`` runs a command as run_command does (tests pass a stand-in)."""
    p = dict(DEFAULTS)
    p.update({k: v for k, v in params.items() if v is not None or k == "gpus"})
    return {
        "ncclkit_gpu_capabilities": gpu_capabilities(p["gpus"], p["gpu_absent_reason"], p["nvidia_smi"], run),
        "ncclkit_cuda": find_cuda(p["cuda_home"], run),
        "ncclkit_nccl": find_nccl(p["nccl_source"], p["nccl_home"], p["torch_python"],
                                  p["torch_python_candidates"], run),
        "ncclkit_mpi": find_mpi(p["mpi_home"], p["mpicc"], p["mpi_candidates"], run),
    }


# --- GPUs -------------------------------------------------------------------------------------

def gpu_capabilities(gpus, absent_reason, nvidia_smi, run=run_command):
    """From the GPUs already gathered (nccl_preflight_gpus) when given, else from nvidia-smi."""
    if gpus is not None:
        joined = ",".join(_text(gpu.get("compute_cap", "")) for gpu in gpus)
        caps = [cap for cap in joined.split(",") if cap]
        reason = absent_reason or "nccl_preflight found no GPU"
    else:
        caps, reason = _ask_nvidia_smi(nvidia_smi, run)
    sm = sorted({_jinja_int(cap.replace(".", "")) for cap in caps})
    return {
        "present": bool(caps),
        "count": len(caps),
        "capabilities": caps,
        "sm": sm,
        "oldest": sm[0] if sm else None,
        "newest": sm[-1] if sm else None,
        "reason": "" if caps else reason.strip(),
    }


def _ask_nvidia_smi(nvidia_smi, run):
    found = shutil.which(nvidia_smi)
    if not found:
        return [], f"{nvidia_smi} not found: install the NVIDIA driver"
    rc, raw = run([found, "--query-gpu=compute_cap", "--format=csv,noheader"], merge_stderr=True)
    caps = [c for c in (line.replace(" ", "").replace("\r", "") for line in raw.split("\n"))
            if _GPU_CAP.match(c)]
    head = " ".join(raw.rstrip("\n").split("\n")[:2])
    return caps, f"{nvidia_smi} listed no GPU (exit {rc}): {head}"


def _text(value):
    """A value as Jinja's string filter writes it (an absent compute_cap is empty)."""
    return "" if value is None else str(value)


def _jinja_int(text):
    """Jinja's int filter: the number, else the whole part of a float, else 0."""
    try:
        return int(text, 10)
    except ValueError:
        try:
            return int(float(text))
        except ValueError:
            return 0


# --- CUDA -------------------------------------------------------------------------------------

def find_cuda(cuda_home, run=run_command):
    """The given folder's nvcc, else $CUDA_HOME's, PATH's, /usr/local/cuda*'s: the first that
    reports a release."""
    if cuda_home:
        candidates = [os.path.join(cuda_home, "bin", "nvcc")]
    else:
        env_home = os.environ.get("CUDA_HOME", "")
        candidates = [os.path.join(env_home, "bin", "nvcc")] if env_home else []
        candidates.append(shutil.which("nvcc") or "")
        candidates += _expand(CUDA_NVCC_FALLBACKS)
    for nvcc in candidates:
        if not nvcc or not _is_executable(nvcc):
            continue
        version = _first_group(_NVCC_RELEASE, run([nvcc, "--version"])[1])
        if not version:
            continue
        home = cuda_home or _cuda_home_of(nvcc, run)
        return {"found": True, "nvcc": nvcc, "version": version, "major": _jinja_int(version.split(".")[0]),
                "home": home, "hint": ""}
    return {"found": False, "nvcc": "", "version": "", "major": 0, "home": "", "hint": CUDA_HINT}


def _cuda_home_of(nvcc, run):
    home = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
    if os.path.exists(os.path.join(home, "include", "cuda_runtime.h")) or os.path.isdir(os.path.join(home, "targets")):
        return home
    # A wrapper script (/usr/local/bin/nvcc): the compiler driver says where it lives, as TOP=<home>/bin/..
    dummy, out = run([nvcc, "--dryrun", "-x", "cu", "-c", "/dev/null", "-o", "/dev/null"], merge_stderr=True)
    top = _first_group(_NVCC_TOP, out)
    return os.path.realpath(top) if top else home


# --- NCCL -------------------------------------------------------------------------------------

def find_nccl(source, nccl_home, torch_python, torch_python_candidates, run=run_command):
    """PyTorch's NCCL (the nvidia/nccl folder beside torch), the system's or the given folder, as
    ``source`` says; ``auto`` (or any other word) tries them in that order."""
    finders = {
        "torch": lambda: _nccl_torch(torch_python, torch_python_candidates, run),
        "system": lambda: _nccl_system(run),
        "path": lambda: _nccl_path(nccl_home),
    }
    order = [finders[source]] if source in finders else list(finders.values())
    for finder in order:
        found = finder()
        if found:
            return found
    return {"found": False, "source": "", "home": "", "include_dir": "", "lib_dir": "", "library": "",
            "dev_link": "", "version": "", "python": "", "hint": NCCL_HINT.format(mode=source)}


def _nccl_torch(torch_python, candidates, run):
    for python in [torch_python] if torch_python else _expand(candidates):
        if not shutil.which(python):
            continue
        rc, out = run([python, "-"], stdin_text=TORCH_NCCL_SCRIPT)
        lines = out.split("\n")
        if rc != 0 or not lines[0]:
            continue
        home, executable = lines[0], lines[1] if len(lines) > 1 else ""
        library = _nccl_library([os.path.join(home, "lib")])
        if library:
            return _nccl_fact("torch", home, os.path.join(home, "include"), library, executable)
    return None


def _nccl_system(run):
    for include in SYSTEM_NCCL_INCLUDE_DIRS:
        if not os.path.isfile(os.path.join(include, "nccl.h")):
            continue
        library = _nccl_library(SYSTEM_NCCL_LIB_DIRS) or _ldconfig_nccl(run)
        if library:
            return _nccl_fact("system", os.path.dirname(include), include, library)
    return None


def _nccl_path(nccl_home):
    if not nccl_home or not os.path.isfile(os.path.join(nccl_home, "include", "nccl.h")):
        return None
    library = _nccl_library([os.path.join(nccl_home, "lib"), os.path.join(nccl_home, "lib64")])
    return _nccl_fact("path", nccl_home, os.path.join(nccl_home, "include"), library) if library else None


def _nccl_library(folders):
    """The first libnccl.so.2, libnccl.so.N or libnccl.so in the folders, in order."""
    for folder in folders:
        numbered = sorted(glob.glob(os.path.join(glob.escape(folder), "libnccl.so.[0-9]*")))
        for path in [os.path.join(folder, "libnccl.so.2")] + numbered + [os.path.join(folder, "libnccl.so")]:
            if os.path.exists(path):
                return path
    return ""


def _ldconfig_nccl(run):
    for line in run(["ldconfig", "-p"])[1].split("\n"):
        fields = line.split()
        if fields and fields[0].startswith("libnccl.so"):
            return fields[-1]
    return ""


def _nccl_fact(source, home, include_dir, library, python=""):
    lib_dir = os.path.dirname(library)
    dev_link = os.path.join(lib_dir, "libnccl.so")
    return {
        "found": True, "source": source, "home": home, "include_dir": include_dir, "lib_dir": lib_dir,
        "library": os.path.realpath(library),
        "dev_link": dev_link if os.path.exists(dev_link) else "",
        "version": nccl_header_version(os.path.join(include_dir, "nccl.h")),
        "python": python, "hint": "",
    }


def nccl_header_version(header):
    """MAJOR.MINOR.PATCH from nccl.h's defines (a part not found stays empty, as in "2..")."""
    try:
        with open(header, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        text = ""
    parts = []
    for name in ("NCCL_MAJOR", "NCCL_MINOR", "NCCL_PATCH"):
        match = re.search(rf"^#define {name} *([0-9]*)", text, re.MULTILINE)
        parts.append(match.group(1) if match else "")
    return ".".join(parts)


# --- MPI --------------------------------------------------------------------------------------

def find_mpi(mpi_home, mpicc, candidates, run=run_command):
    """The given folder (nothing else then), else Open MPI's mpicc (its include and library
    folders, then the folder it is installed in), else the first candidate folder (globs allowed)
    with include/mpi.h and lib/libmpi.so."""
    if mpi_home:
        found = _mpi_in(mpi_home, "", run)
    else:
        found = _mpi_of_mpicc(mpicc, run) or _mpi_in_candidates(candidates, run)
    return found or {"found": False, "flavor": "", "home": "", "include_dir": "", "lib_dir": "",
                     "mpicc": "", "version": "", "hint": MPI_HINT}


def _mpi_of_mpicc(mpicc, run):
    cc = shutil.which(mpicc) if mpicc else None
    if not cc:
        return None
    for include in run([cc, "--showme:incdirs"])[1].split():
        if not os.path.isfile(os.path.join(include, "mpi.h")):
            continue
        for lib in run([cc, "--showme:libdirs"])[1].split():
            if os.path.exists(os.path.join(lib, "libmpi.so")):
                return _mpi_fact(os.path.dirname(include), include, lib, cc, run)
    return _mpi_in(os.path.dirname(os.path.dirname(os.path.realpath(cc))), cc, run)


def _mpi_in_candidates(candidates, run):
    for home in _expand(candidates):
        found = os.path.isdir(home) and _mpi_in(home, "", run)
        if found:
            return found
    return None


def _mpi_in(home, cc, run):
    """MPI installed in ``home`` (include/mpi.h, lib or lib64/libmpi.so); its own mpicc unless given."""
    if not cc and _is_executable(os.path.join(home, "bin", "mpicc")):
        cc = os.path.join(home, "bin", "mpicc")
    include = os.path.join(home, "include")
    for lib in (os.path.join(home, "lib"), os.path.join(home, "lib64")):
        if os.path.isfile(os.path.join(include, "mpi.h")) and os.path.exists(os.path.join(lib, "libmpi.so")):
            return _mpi_fact(home, include, lib, cc, run)
    return None


def _mpi_fact(home, include_dir, lib_dir, cc, run):
    version = _first_group(_OPEN_MPI_VERSION, run([cc, "--showme:version"])[1]) if cc else ""
    ompi_info = os.path.join(home, "bin", "ompi_info")
    if not version and _is_executable(ompi_info):
        version = _first_group(_OMPI_INFO_VERSION, run([ompi_info, "--version"])[1])
    return {"found": True, "flavor": "openmpi", "home": home, "include_dir": include_dir, "lib_dir": lib_dir,
            "mpicc": cc, "version": version, "hint": ""}


# --- helpers ----------------------------------------------------------------------------------

def _expand(patterns):
    """Each pattern's matches, sorted; a pattern that matches nothing stays as it is (a shell
    does the same), so that it is tried and found missing."""
    paths = []
    for pattern in patterns:
        matches = sorted(glob.glob(pattern)) if _GLOB_CHARS.search(pattern) else []
        paths += matches or [pattern]
    return paths


def _is_executable(path):
    return os.path.exists(path) and os.access(path, os.X_OK)


def _first_group(pattern, text):
    """The first line's group that ``pattern`` matches, or ''."""
    for line in text.split("\n"):
        match = pattern.match(line)
        if match:
            return match.group(1)
    return ""
