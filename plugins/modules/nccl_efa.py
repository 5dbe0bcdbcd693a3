#!/usr/bin/python
# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Find AWS EFA devices, the EFA software and aws-ofi-nccl on a host; set the NCCL values for them."""

from __future__ import annotations

DOCUMENTATION = r"""
module: nccl_efa
short_description: Find EFA, libfabric's efa provider and aws-ofi-nccl on a host
description:
  - Reads nccl_preflight's RDMA port lines for devices whose sysfs driver is C(efa), asks
    C(fi_info -p efa -t FI_EP_RDM) for the efa provider (with a time limit), and looks for the
    aws-ofi-nccl library among the files of its package (C(dpkg-query -L) or C(rpm -ql)
    C(libnccl-ofi)) and in O(plugin_dirs).
  - Sets C(cloud_aws_efa) (devices, count, installed, provider version, plugin path,
    C(gdr_module) - C(efa_nv_peermem) where loaded, the module that gives EFA GPUDirect RDMA -
    C(container_env) - the EFA values with a host path replaced for containers - and
    C(install_blocker) - why the EFA installer cannot run, with what to do, or empty) and, where
    EFA and the plugin are there, C(ncclkit_cloud_nccl_env) with C(NCCL_NET=AWS Libfabric) (the
    name every aws-ofi-nccl version accepts), so that a missing plugin fails at once instead of
    falling back to sockets, and C(NCCL_NET_PLUGIN) - the library's full path when every NCCL in
    O(nccl_versions) is 2.21 or later, else the short name NCCL 2.20 and older also load (C(ofi)),
    or unset for C(libnccl-net.so).
  - Changes nothing on the host.
version_added: 0.2.0
author: ncclkit maintainers (!UNKNOWN)
options:
  rdma_ports:
    description: nccl_preflight_rdma_ports (C(device|port|state|link_layer|driver) lines).
    type: list
    elements: str
    default: []
  fi_info:
    description: The fi_info binary of the EFA software.
    type: path
    default: /opt/amazon/efa/bin/fi_info
  plugin_dirs:
    description: Folders that may hold aws-ofi-nccl's library.
    type: list
    elements: path
    default: [/opt/amazon/ofi-nccl/lib, /opt/amazon/ofi-nccl/lib64, /opt/amazon/ofi-nccl/lib/x86_64-linux-gnu,
              /opt/amazon/ofi-nccl/lib/aarch64-linux-gnu, /opt/amazon/aws-ofi-nccl/lib, /opt/aws-ofi-nccl/lib]
  nccl_versions:
    description:
      - The NCCL versions the jobs load (C(ncclkit_nccl.version), and nccl-tests' where known).
      - Empty or an unknown version counts as older than 2.21.
    type: list
    elements: str
    default: []
  installer_version:
    description:
      - The EFA installer version the role would install (named in C(install_blocker)).
      - Where O(installer_sha256) is empty, AWS's published checksum of this version is used, if the collection carries it.
    type: str
    default: ""
  installer_sha256:
    description:
      - The installer archive's sha256 as the role has it (empty when not set).
      - The checksum the role then checks is C(cloud_aws_efa.installer_sha256).
    type: str
    default: ""
  timeout:
    description: Seconds each host command (fi_info, the package query) may take.
    type: int
    default: 30
  cloud_env:
    description: C(ncclkit_cloud_nccl_env) so far; the EFA values are added to it.
    type: dict
    default: {}
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
"""

EXAMPLES = r"""
- name: Find EFA
  ncclkit.cluster.nccl_efa:
    rdma_ports: "{{ nccl_preflight_rdma_ports }}"
"""

RETURN = r"""
ansible_facts:
  description: C(cloud_aws_efa), and C(ncclkit_cloud_nccl_env) where EFA and aws-ofi-nccl are present.
  returned: success
  type: dict
"""

import os
import shutil

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ncclkit.cluster.plugins.module_utils.clouds.aws.efa_host import (
    PLUGIN_DIRS,
    PLUGIN_PACKAGE,
    container_env,
    efa_devices,
    efa_env,
    efa_gdr_module,
    fi_info_version,
    find_plugin,
    install_blocker,
    owned_files,
)
from ansible_collections.ncclkit.cluster.plugins.module_utils.clouds.aws.efa_installer import installer_sha256
from ansible_collections.ncclkit.cluster.plugins.module_utils.host.command import run_command


def _read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as stream:
            return stream.read()
    except OSError:
        return ""


def package_files(timeout):
    """The plugin package's files as the host's package manager lists them ([] when not installed)."""
    for tool, flag in (("dpkg-query", "-L"), ("rpm", "-ql")):
        if shutil.which(tool):
            rc, out, _err = run_command([tool, flag, PLUGIN_PACKAGE], timeout)
            if rc == 0:
                return owned_files(out)
    return []


def main():
    module = AnsibleModule(
        argument_spec={
            "rdma_ports": {"type": "list", "elements": "str", "default": []},
            "fi_info": {"type": "path", "default": "/opt/amazon/efa/bin/fi_info"},
            "plugin_dirs": {"type": "list", "elements": "path", "default": list(PLUGIN_DIRS)},
            "cloud_env": {"type": "dict", "default": {}},
            "nccl_versions": {"type": "list", "elements": "str", "default": []},
            "installer_version": {"type": "str", "default": ""},
            "installer_sha256": {"type": "str", "default": ""},
            "timeout": {"type": "int", "default": 30},
        },
        supports_check_mode=True,
    )
    params = module.params
    devices = efa_devices(params["rdma_ports"])
    version, fi_info_error = "", ""
    if devices and os.access(params["fi_info"], os.X_OK):
        rc, out, err = run_command([params["fi_info"], "-p", "efa", "-t", "FI_EP_RDM"], params["timeout"])
        version = fi_info_version(out) if rc == 0 else ""
        said = (err or out).strip().splitlines()
        fi_info_error = "" if version else (said[-1][:200] if said else f"fi_info exited {rc}")
    plugin = find_plugin(params["plugin_dirs"], package_files(params["timeout"]) if devices else [])
    facts = {"cloud_aws_efa": {
        "devices": devices, "count": len(devices), "provider_version": version,
        "fi_info_ok": bool(version), "fi_info_error": fi_info_error or "", "plugin": plugin,
        "installed": bool(version and plugin)}}
    facts["cloud_aws_efa"]["gdr_module"] = efa_gdr_module(_read("/proc/modules")) if devices else ""
    sha256 = installer_sha256(params["installer_version"], params["installer_sha256"])
    facts["cloud_aws_efa"]["installer_sha256"] = sha256
    facts["cloud_aws_efa"]["install_blocker"] = install_blocker(facts["cloud_aws_efa"], sha256, params["installer_version"])
    if devices and version and plugin:
        facts["ncclkit_cloud_nccl_env"] = efa_env(params["cloud_env"], plugin, params["nccl_versions"])
        facts["cloud_aws_efa"]["container_env"] = container_env(facts["ncclkit_cloud_nccl_env"])
    module.exit_json(changed=False, ansible_facts=facts)


if __name__ == "__main__":
    main()
