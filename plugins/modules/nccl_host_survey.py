#!/usr/bin/python
# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Read, in one module run, everything nccl_preflight records about a host."""

from __future__ import annotations

DOCUMENTATION = r"""
module: nccl_host_survey
short_description: Read everything nccl_preflight records about a GPU host in one run
description:
  - One module run per host instead of one per question - each module run costs a Python start
    and an SSH round trip on the host, which is what made the preflight of a large cluster slow.
  - Reads the NICs over rtnetlink (as M(ncclkit.cluster.nccl_nics)), the GPUs from
    C(nvidia-smi --query-gpu), the RDMA ports under C(/sys/class/infiniband), the container's
    limits (as M(ncclkit.cluster.nccl_container), sized for the GPUs found), the CUDA toolkit,
    NCCL and MPI (as M(ncclkit.cluster.nccl_toolchain)) and, with O(check), what the rendezvous
    depends on (as M(ncclkit.cluster.nccl_check) V(gather), asking the NCCL's Python for torch).
  - Sets the facts C(nccl_preflight_nics), C(nccl_preflight_gpus), C(nccl_preflight_gpu_absent_reason),
    C(nccl_preflight_rdma_ports), C(ncclkit_container), C(ncclkit_gpu_capabilities), C(ncclkit_cuda),
    C(ncclkit_nccl) and C(ncclkit_mpi) (docs/facts.md).
  - Only reads; it changes nothing on the host.
version_added: 0.1.0
author: ncclkit maintainers (!UNKNOWN)
options:
  nvidia_smi:
    description: The nvidia-smi command name or path.
    type: str
    default: nvidia-smi
  data_dir_candidates:
    description: Folders that are a data disk when they exist (see M(ncclkit.cluster.nccl_container)).
    type: list
    elements: path
    default: [/root/autodl-tmp]
  network_turbo_path:
    description: A shell snippet exporting the download proxy (AutoDL's academic proxy).
    type: path
    default: /etc/network_turbo
  sysfs:
    description: Where sysfs is mounted (tests point it at a fake tree).
    type: path
    default: /sys
  toolchain:
    description: Where to look for the CUDA toolkit, NCCL and MPI - the options of M(ncclkit.cluster.nccl_toolchain) but its GPU ones.
    type: dict
    default: {}
    suboptions:
      cuda_home:
        description:
        - The CUDA toolkit's folder (holding C(bin/nvcc)); nothing else is tried then.
        - Empty tries C($CUDA_HOME/bin/nvcc), C(nvcc) on PATH, C(/usr/local/cuda/bin/nvcc), C(/usr/local/cuda-*/bin/nvcc)
          and C(/usr/bin/nvcc), the first that reports a release. A wrapper script (C(/usr/local/bin/nvcc))
          is followed to its toolkit through C(nvcc --dryrun) (its C(TOP) line).
        type: str
        default: ''
      nccl_source:
        description:
        - Which NCCL to report. V(torch) is PyTorch's (the C(nvidia/nccl) folder beside torch, as the pip
          wheel installs it), V(system) is the system package's (C(libnccl-dev)), V(path) is O(toolchain.nccl_home).
          V(auto) tries them in that order.
        type: str
        choices:
        - auto
        - torch
        - system
        - path
        default: auto
      nccl_home:
        description: A folder with C(include/nccl.h) and C(lib/libnccl.so*) (or C(lib64/)), for V(path) and
          V(auto).
        type: str
        default: ''
      torch_python:
        description: The python of the training environment (the one that imports torch); empty tries O(toolchain.torch_python_candidates).
        type: str
        default: ''
      torch_python_candidates:
        description:
        - The pythons tried, in order (names on PATH or paths; globs allowed), for torch with an C(nvidia/*/include/nccl.h)
          beside it. Each is run once with a short script that locates torch without importing it.
        type: list
        elements: str
        default:
        - python3
        - /opt/conda/bin/python3
        - /root/miniconda3/bin/python3
      mpi_home:
        description: A folder with C(include/mpi.h) and C(lib/libmpi.so) (or C(lib64/)) that settles MPI;
          nothing else is tried then.
        type: str
        default: ''
      mpicc:
        description:
        - Open MPI's compiler wrapper (a name on PATH or a path), asked C(--showme:incdirs), C(--showme:libdirs)
          and C(--showme:version); then the folder it is installed in is tried.
        type: str
        default: mpicc
      mpi_candidates:
        description: MPI folders tried, in order, after O(toolchain.mpicc) (globs allowed, such as C(/usr/mpi/gcc/openmpi-*)).
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
  check:
    description: Also read what the rendezvous depends on (C(check_view)), for C(ncclkit check).
    type: bool
    default: false
  hostname:
    description: With O(check), the host name to resolve; empty takes the host's own (gethostname).
    type: str
    default: ""
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: The module only reads, so it runs fully in check mode.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
"""

EXAMPLES = r"""
- name: Read what nccl_preflight records about the host
  ncclkit.cluster.nccl_host_survey:
    nvidia_smi: /usr/bin/nvidia-smi
  register: __nccl_preflight_survey
"""

RETURN = r"""
ansible_facts:
  description: What nccl_preflight records about the host.
  returned: success
  type: dict
  contains:
    nccl_preflight_nics:
      description: The NICs, as M(ncclkit.cluster.nccl_nics) returns them.
      type: list
      elements: dict
    nccl_preflight_gpus:
      description: One entry per GPU, C(index), C(name), C(compute_cap), C(driver_version), C(memory_total_mib), C(pci_bus_id).
      type: list
      elements: dict
      sample: [{index: 0, name: NVIDIA H200, compute_cap: "9.0", driver_version: "580.95.05", memory_total_mib: 143771,
                pci_bus_id: "00000000:18:00.0"}]
    nccl_preflight_gpu_absent_reason:
      description: Why no GPU was listed (nvidia-smi missing or failing); empty when GPUs were found.
      type: str
      sample: nvidia-smi not found
    nccl_preflight_rdma_ports:
      description: One C(device|port|state|link_layer|driver|rate) line per RDMA port (rate as sysfs says it, C(400 Gb/sec (4X NDR))).
      type: list
      elements: str
      sample: ["mlx5_0|1|4: ACTIVE|InfiniBand|mlx5_core"]
    ncclkit_container:
      description: What the host lets the roles change, as M(ncclkit.cluster.nccl_container) sets it.
      type: dict
    ncclkit_gpu_capabilities:
      description: The GPUs' compute capabilities, as M(ncclkit.cluster.nccl_toolchain) returns them.
      type: dict
    ncclkit_cuda:
      description: The CUDA toolkit, as M(ncclkit.cluster.nccl_toolchain) returns it.
      type: dict
    ncclkit_nccl:
      description: The NCCL found, as M(ncclkit.cluster.nccl_toolchain) returns it.
      type: dict
    ncclkit_mpi:
      description: The MPI found, as M(ncclkit.cluster.nccl_toolchain) returns it.
      type: dict
check_view:
  description: With O(check), what the rendezvous depends on, as M(ncclkit.cluster.nccl_check) V(gather) returns it.
  returned: check is true
  type: dict
"""

import socket

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ncclkit.cluster.plugins.module_utils.check_host import gather
from ansible_collections.ncclkit.cluster.plugins.module_utils.container_facts import container_facts
from ansible_collections.ncclkit.cluster.plugins.module_utils.linux_nics import NicReadError, read_nics
from ansible_collections.ncclkit.cluster.plugins.module_utils.nvidia_smi import read_gpus
from ansible_collections.ncclkit.cluster.plugins.module_utils.rdma_devices import read_port_lines
from ansible_collections.ncclkit.cluster.plugins.module_utils.toolchain import SEARCH_OPTIONS, detect_toolchain


def main():
    module = AnsibleModule(
        argument_spec={
            "nvidia_smi": {"type": "str", "default": "nvidia-smi"},
            "data_dir_candidates": {"type": "list", "elements": "path", "default": ["/root/autodl-tmp"]},
            "network_turbo_path": {"type": "path", "default": "/etc/network_turbo"},
            "sysfs": {"type": "path", "default": "/sys"},
            "toolchain": {"type": "dict", "default": {}, "options": SEARCH_OPTIONS},
            "check": {"type": "bool", "default": False},
            "hostname": {"type": "str", "default": ""},
        },
        supports_check_mode=True,
    )
    params = module.params
    try:
        nics = read_nics()
    except NicReadError as error:
        module.fail_json(msg=f"{error}; is this a Linux host?")
    try:
        gpus, absent_reason = read_gpus(params["nvidia_smi"])
    except ValueError as error:
        module.fail_json(msg=f"{error}: check the driver with `{params['nvidia_smi']}` on this host")
    facts = {
        "nccl_preflight_nics": nics,
        "nccl_preflight_gpus": gpus,
        "nccl_preflight_gpu_absent_reason": absent_reason,
        "nccl_preflight_rdma_ports": read_port_lines(params["sysfs"]),
        "ncclkit_container": container_facts(gpu_count=len(gpus), data_dir_candidates=params["data_dir_candidates"],
                                             network_turbo_path=params["network_turbo_path"]),
    }
    facts.update(detect_toolchain(dict(params["toolchain"] or {}, gpus=gpus, gpu_absent_reason=absent_reason,
                                       nvidia_smi=params["nvidia_smi"])))
    result = {"changed": False, "ansible_facts": facts}
    if params["check"]:
        result["check_view"] = gather(params["hostname"] or socket.gethostname(), facts["ncclkit_nccl"]["python"],
                                      bool(gpus))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
