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
extends_documentation_fragment:
  - ncclkit.cluster.attributes
  - ncclkit.cluster.toolchain_search.survey
options:
  nvidia_smi:
    description: The nvidia-smi command name or path.
    type: str
    default: nvidia-smi
  gpu_required:
    description: Fail on a host where no GPU is found, naming why none was found.
    type: bool
    default: false
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
    support: full
    details: The module only reads, so it runs fully in check mode.
  diff_mode:
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

import os
import socket

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ncclkit.cluster.plugins.module_utils.check.host import gather
from ansible_collections.ncclkit.cluster.plugins.module_utils.host.container import (
    CUMEM_SWITCHES,
    add_cumem_facts,
    container_facts,
    nccl_conf_settings,
    read_cuda_driver_version,
)
from ansible_collections.ncclkit.cluster.plugins.module_utils.host.nics import NicReadError, read_nics
from ansible_collections.ncclkit.cluster.plugins.module_utils.host.gpus import read_gpus
from ansible_collections.ncclkit.cluster.plugins.module_utils.host.rdma import read_port_lines
from ansible_collections.ncclkit.cluster.plugins.module_utils.host.toolchain import SEARCH_OPTIONS, detect_toolchain


def _cumem_settings():
    """NCCL's cuMem switches as NCCL reads them: /etc/nccl.conf, then the environment over it."""
    try:
        with open("/etc/nccl.conf", encoding="utf-8", errors="replace") as stream:
            settings = nccl_conf_settings(stream.read())
    except OSError:
        settings = {}
    settings.update({name: os.environ[name] for name in CUMEM_SWITCHES if name in os.environ})
    return settings


def main():
    module = AnsibleModule(
        argument_spec={
            "nvidia_smi": {"type": "str", "default": "nvidia-smi"},
            "gpu_required": {"type": "bool", "default": False},
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
    if not params["nvidia_smi"].strip():
        module.fail_json(msg="nvidia_smi is empty: give the nvidia-smi command name or path "
                             "(nccl_preflight_nvidia_smi in the inventory's group_vars)")
    try:
        nics = read_nics()
    except NicReadError as error:
        module.fail_json(msg=f"{error}; is this a Linux host?")
    try:
        gpus, absent_reason = read_gpus(params["nvidia_smi"])
    except ValueError as error:
        module.fail_json(msg=f"{error}: check the driver with `{params['nvidia_smi']}` on this host")
    if params["gpu_required"] and not gpus:
        module.fail_json(msg=f"No GPU on this host ({absent_reason}) but a GPU is required: install the NVIDIA "
                             "driver (nvidia-smi must list the GPUs) or set nccl_preflight_gpu_required to false.")
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
    add_cumem_facts(facts["ncclkit_container"], facts["ncclkit_nccl"].get("version", ""),
                    read_cuda_driver_version() if gpus else "", _cumem_settings())
    result = {"changed": False, "ansible_facts": facts}
    if params["check"]:
        result["check_view"] = gather(params["hostname"] or socket.gethostname(), facts["ncclkit_nccl"]["python"],
                                      bool(gpus))
        result["check_view"]["shm_cumem"] = facts["ncclkit_container"]["shm_cumem"]
    module.exit_json(**result)


if __name__ == "__main__":
    main()
