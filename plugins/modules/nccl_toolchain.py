#!/usr/bin/python
# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Find the GPUs' compute capabilities, the CUDA toolkit, NCCL and Open MPI of a host."""

from __future__ import annotations

DOCUMENTATION = r"""
module: nccl_toolchain
short_description: Find what a host has for building and running NCCL programs
description:
  - Finds the GPUs' compute capabilities, the CUDA toolkit (nvcc), the NCCL that PyTorch loads
    (else the system's, else a given folder) and Open MPI, and returns them as four dicts, the
    facts C(ncclkit_gpu_capabilities), C(ncclkit_cuda), C(ncclkit_nccl) and C(ncclkit_mpi) that
    the roles C(nccl_preflight) and C(nccl_tests) set.
  - A piece not found is reported with C(found) (C(present) for the GPUs) false and a C(hint) naming
    how to get it; nothing fails here, the roles that need a piece assert it.
  - Only reads; it changes nothing on the host. Every program it asks (nvidia-smi, nvcc, the
    candidate pythons, mpicc, ompi_info, ldconfig) runs without a shell and with a timeout.
version_added: 0.1.0
author: ncclkit maintainers (!UNKNOWN)
extends_documentation_fragment:
  - ncclkit.cluster.attributes
  - ncclkit.cluster.toolchain_search
options:
  gpus:
    description:
      - The GPUs already gathered (C(nccl_preflight_gpus)), each a dict with C(compute_cap) such as
        C(9.0). Given (an empty list too), nvidia-smi is not asked.
      - Left out, O(nvidia_smi) is asked for C(--query-gpu=compute_cap).
    type: list
    elements: dict
  gpu_absent_reason:
    description: Why O(gpus) is empty (C(nccl_preflight_gpu_absent_reason)); the C(reason) when it is.
    type: str
    default: ""
  nvidia_smi:
    description: The nvidia-smi to ask when O(gpus) is left out, a name on PATH or an absolute path.
    type: str
    default: nvidia-smi
attributes:
  check_mode:
    support: full
    details: The module only reads, so it runs fully in check mode.
  diff_mode:
    support: none
notes:
  - The hints name the C(nccl_preflight_*) role variables, which map one to one onto these options.
  - The detection is plain Python (C(module_utils/host/toolchain.py), C(detect_toolchain)) that other
    modules can call with the same option names.
"""

EXAMPLES = r"""
- name: Find the toolchain, reusing the GPUs that nvidia-smi listed before
  ncclkit.cluster.nccl_toolchain:
    gpus: "{{ nccl_preflight_gpus | default(omit) }}"
    torch_python: /opt/conda/envs/train/bin/python
  register: __nccl_preflight_toolchain

- name: Record the four facts
  ansible.builtin.set_fact:
    ncclkit_cuda: "{{ __nccl_preflight_toolchain.ncclkit_cuda }}"
    ncclkit_nccl: "{{ __nccl_preflight_toolchain.ncclkit_nccl }}"

- name: Build against a NCCL folder of one's own, with HPC-X's MPI
  ncclkit.cluster.nccl_toolchain:
    nccl_source: path
    nccl_home: /opt/nccl
    mpi_home: /opt/hpcx/ompi
    cuda_home: /usr/local/cuda-12.4
"""

RETURN = r"""
ncclkit_gpu_capabilities:
  description: The GPUs' compute capabilities.
  returned: always
  type: dict
  contains:
    present:
      description: Whether any GPU was found.
      type: bool
    count:
      description: Number of GPUs.
      type: int
      sample: 8
    capabilities:
      description: Each GPU's compute capability, as nvidia-smi prints it.
      type: list
      elements: str
      sample: ["9.0", "9.0"]
    sm:
      description: The distinct capabilities as C(sm_XY) numbers, sorted.
      type: list
      elements: int
      sample: [90]
    oldest:
      description: The lowest of RV(ncclkit_gpu_capabilities.sm); null without a GPU.
      type: int
      sample: 90
    newest:
      description: The highest of RV(ncclkit_gpu_capabilities.sm); null without a GPU.
      type: int
      sample: 90
    reason:
      description: Why no GPU was found (empty when one was).
      type: str
      sample: "nvidia-smi not found: install the NVIDIA driver"
ncclkit_cuda:
  description: The CUDA toolkit.
  returned: always
  type: dict
  contains:
    found:
      description: Whether an nvcc that reports a release was found.
      type: bool
    nvcc:
      description: The nvcc found (as found, a wrapper script too).
      type: str
      sample: /usr/local/cuda/bin/nvcc
    version:
      description: The release nvcc reports.
      type: str
      sample: "13.0"
    major:
      description: The release's major number; 0 when not found.
      type: int
      sample: 13
    home:
      description: The toolkit's folder (O(cuda_home) as given, else the one nvcc lives in).
      type: str
      sample: /usr/local/cuda-13.0
    hint:
      description: How to get the toolkit; empty when found.
      type: str
ncclkit_nccl:
  description: The NCCL to build against and load.
  returned: always
  type: dict
  contains:
    found:
      description: Whether a NCCL with its header and library was found.
      type: bool
    source:
      description: C(torch), C(system) or C(path); empty when not found.
      type: str
      sample: torch
    home:
      description: The NCCL folder.
      type: str
      sample: /usr/local/lib/python3.12/dist-packages/nvidia/nccl
    include_dir:
      description: The folder holding C(nccl.h).
      type: str
    lib_dir:
      description: The folder holding the library.
      type: str
    library:
      description: The library, symbolic links resolved.
      type: str
      sample: /usr/local/lib/python3.12/dist-packages/nvidia/nccl/lib/libnccl.so.2
    dev_link:
      description: C(libnccl.so) in RV(ncclkit_nccl.lib_dir) when it exists (the pip wheel has none).
      type: str
    version:
      description: MAJOR.MINOR.PATCH from C(nccl.h).
      type: str
      sample: 2.28.9
    python:
      description: For C(torch), the python that found it (its C(sys.executable)).
      type: str
    hint:
      description: How to get NCCL (names the mode looked in); empty when found.
      type: str
ncclkit_mpi:
  description: Open MPI.
  returned: always
  type: dict
  contains:
    found:
      description: Whether an MPI with C(mpi.h) and C(libmpi.so) was found.
      type: bool
    flavor:
      description: C(openmpi) when found, else empty.
      type: str
    home:
      description: The MPI folder.
      type: str
      sample: /usr/lib/x86_64-linux-gnu/openmpi
    include_dir:
      description: The folder holding C(mpi.h).
      type: str
    lib_dir:
      description: The folder holding C(libmpi.so).
      type: str
    mpicc:
      description: The mpicc used, empty when none was.
      type: str
    version:
      description: The Open MPI version (from mpicc, else ompi_info); empty when neither says.
      type: str
      sample: 4.1.4
    hint:
      description: How to get MPI; empty when found.
      type: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ncclkit.cluster.plugins.module_utils.host.toolchain import (
    DEFAULTS,
    SEARCH_OPTIONS,
    detect_toolchain,
)


def main():
    module = AnsibleModule(
        argument_spec={
            "gpus": {"type": "list", "elements": "dict"},
            "gpu_absent_reason": {"type": "str", "default": DEFAULTS["gpu_absent_reason"]},
            "nvidia_smi": {"type": "str", "default": DEFAULTS["nvidia_smi"]},
            **SEARCH_OPTIONS,
        },
        supports_check_mode=True,
    )
    module.exit_json(changed=False, **detect_toolchain(module.params))


if __name__ == "__main__":
    main()
