# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""The toolchain search's options (module_utils.toolchain.SEARCH_OPTIONS), documented once: as
top-level options for nccl_toolchain (DOCUMENTATION) and as the suboptions of nccl_host_survey's
`toolchain` option (SURVEY, made from the same text below the class)."""

from __future__ import annotations

import re


class ModuleDocFragment:  # pylint: disable=too-few-public-methods
    """`extends_documentation_fragment: ncclkit.cluster.toolchain_search` (or `.survey`)."""

    DOCUMENTATION = r"""
options:
  cuda_home:
    description:
      - The CUDA toolkit's folder (holding C(bin/nvcc)); nothing else is tried then.
      - Empty tries C($CUDA_HOME/bin/nvcc), C(nvcc) on PATH, C(/usr/local/cuda/bin/nvcc),
        C(/usr/local/cuda-*/bin/nvcc) and C(/usr/bin/nvcc), the first that reports a release.
        A wrapper script (C(/usr/local/bin/nvcc)) is followed to its toolkit through
        C(nvcc --dryrun) (its C(TOP) line).
    type: str
    default: ""
  nccl_source:
    description:
      - Which NCCL to report. V(torch) is PyTorch's (the C(nvidia/nccl) folder beside torch, as the
        pip wheel installs it), V(system) is the system package's (C(libnccl-dev)), V(path) is
        O(nccl_home). V(auto) tries them in that order.
    type: str
    choices: [auto, torch, system, path]
    default: auto
  nccl_home:
    description: A folder with C(include/nccl.h) and C(lib/libnccl.so*) (or C(lib64/)), for V(path) and V(auto).
    type: str
    default: ""
  torch_python:
    description: The python of the training environment (the one that imports torch); empty tries O(torch_python_candidates).
    type: str
    default: ""
  torch_python_candidates:
    description:
      - The pythons tried, in order (names on PATH or paths; globs allowed), for torch with an
        C(nvidia/*/include/nccl.h) beside it. Each is run once with a short script that locates
        torch without importing it.
    type: list
    elements: str
    default: [python3, /opt/conda/bin/python3, /root/miniconda3/bin/python3]
  mpi_home:
    description: A folder with C(include/mpi.h) and C(lib/libmpi.so) (or C(lib64/)) that settles MPI; nothing else is tried then.
    type: str
    default: ""
  mpicc:
    description:
      - Open MPI's compiler wrapper (a name on PATH or a path), asked C(--showme:incdirs),
        C(--showme:libdirs) and C(--showme:version); then the folder it is installed in is tried.
    type: str
    default: mpicc
  mpi_candidates:
    description: MPI folders tried, in order, after O(mpicc) (globs allowed, such as C(/usr/mpi/gcc/openmpi-*)).
    type: list
    elements: str
    default:
      - /usr/lib/x86_64-linux-gnu/openmpi
      - /usr/lib/aarch64-linux-gnu/openmpi
      - /usr/lib64/openmpi
      - /opt/hpcx/ompi
      - /opt/amazon/openmpi
      - /usr/mpi/gcc/openmpi-*
      - /usr/local/mpi
      - /usr/local/openmpi
"""


def _as_suboptions(documentation, option, description):
    """The options above as the suboptions of one dict option; O(name) becomes O(option.name)."""
    body = documentation.split("options:\n", 1)[1]
    body = re.sub(r"O\((\w+)\)", r"O(" + option + r".\1)", body)
    nested = "".join("    " + line if line.strip() else line for line in body.splitlines(True))
    return (f"\noptions:\n  {option}:\n    description: {description}\n    type: dict\n    default: {{}}\n"
            f"    suboptions:\n{nested}")


# Set below the class: ansible-test's yamllint reads the class body's string literals only.
ModuleDocFragment.SURVEY = _as_suboptions(
    ModuleDocFragment.DOCUMENTATION, "toolchain",
    "Where to look for the CUDA toolkit, NCCL and MPI - the options of M(ncclkit.cluster.nccl_toolchain) but its GPU ones.")
