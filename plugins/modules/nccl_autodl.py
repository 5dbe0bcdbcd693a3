#!/usr/bin/python
# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Decide cloud_autodl's settings for one host (shared memory, report folder)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: nccl_autodl
short_description: Check an AutoDL container for NCCL and set the cloud facts
description:
  - Reads nccl_preflight's C(ncclkit_container) fact of the host. A /dev/shm smaller than NCCL's
    shared-memory transport needs for the GPUs present fails with the fix, or, with
    O(shm_fallback), adds C(NCCL_SHM_DISABLE=1) to C(ncclkit_cloud_nccl_env), which nccl_profile
    writes into the profile.
  - Sets C(ncclkit_report_parent) when the controller has its data disk, so that nccl_validate
    writes the reports there.
  - Changes nothing on the host.
version_added: 0.2.0
author: ncclkit maintainers (!UNKNOWN)
options:
  host:
    description: The host's inventory name, for the messages.
    type: str
    required: true
  container:
    description: The host's C(ncclkit_container) fact.
    type: dict
    required: true
  shm_fallback:
    description: Disable NCCL's shared-memory transport instead of failing when /dev/shm is too small.
    type: bool
    default: false
  cloud_env:
    description: The C(ncclkit_cloud_nccl_env) set so far (kept; NCCL_SHM_DISABLE is added to it).
    type: dict
    default: {}
  controller_data_dir:
    description: The controller's data disk.
    type: path
    default: /root/autodl-tmp
  controller_data_dir_exists:
    description: Whether O(controller_data_dir) is a folder on the controller.
    type: bool
    default: false
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
"""

EXAMPLES = r"""
- name: Check the container and set the cloud facts
  ncclkit.cluster.nccl_autodl:
    host: "{{ inventory_hostname }}"
    container: "{{ ncclkit_container }}"
    shm_fallback: "{{ cloud_autodl_shm_fallback }}"
"""

RETURN = r"""
messages:
  description: What was adapted, one line each.
  returned: success
  type: list
  elements: str
ansible_facts:
  description: C(ncclkit_cloud_nccl_env), and C(ncclkit_report_parent) when the controller has its data disk.
  returned: success
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ncclkit.cluster.plugins.module_utils.clouds.autodl.plan import autodl_plan


def main():
    module = AnsibleModule(
        argument_spec={
            "host": {"type": "str", "required": True},
            "container": {"type": "dict", "required": True},
            "shm_fallback": {"type": "bool", "default": False},
            "cloud_env": {"type": "dict", "default": {}},
            "controller_data_dir": {"type": "path", "default": "/root/autodl-tmp"},
            "controller_data_dir_exists": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    params = module.params
    plan = autodl_plan(params["host"], params["container"],
                       params["shm_fallback"], params["cloud_env"], params["controller_data_dir"],
                       params["controller_data_dir_exists"])
    if plan["error"]:
        module.fail_json(msg=plan["error"])
    module.exit_json(changed=False, messages=plan["messages"], ansible_facts=plan["facts"])


if __name__ == "__main__":
    main()
