#!/usr/bin/python
# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Find what a container lets the roles change on this host (fact ncclkit_container)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: nccl_container
short_description: Find the limits a container puts on a GPU host
description:
  - Reads, without changing anything, what the roles that follow must adapt to on container
    clouds such as AutoDL - whether a systemd unit would ever run (PID 1, /sbin/init), whether
    /proc/sys is writable (the port range can be pinned), whether the processes hold
    CAP_NET_ADMIN (a host firewall is possible), the size of /dev/shm against what NCCL's
    shared-memory transport needs for the GPUs present, the proxy of /etc/network_turbo and the
    data disk.
  - Sets the fact C(ncclkit_container); C(adaptations) has one line per thing the roles will do
    differently.
  - For playbooks of one's own that want the container's limits alone. C(nccl_preflight) reads
    the same fact in its one M(ncclkit.cluster.nccl_host_survey) run, sized for the GPUs it finds
    there.
version_added: 0.2.0
author: ncclkit maintainers (!UNKNOWN)
extends_documentation_fragment:
  - ncclkit.cluster.attributes
options:
  gpu_count:
    description: The GPUs of this host (nccl_preflight's count), for the /dev/shm requirement.
    type: int
    default: 0
  data_dir_candidates:
    description: Folders that are a data disk when they exist; the first one found is used.
    type: list
    elements: path
    default: [/root/autodl-tmp]
  network_turbo_path:
    description: A shell snippet exporting the download proxy (AutoDL's academic proxy).
    type: path
    default: /etc/network_turbo
  proc_root:
    description: Where procfs is mounted (tests point it at a fake tree).
    type: path
    default: /proc
  root:
    description: The root of the file tree that holds run/systemd and sbin/init.
    type: path
    default: /
  shm_path:
    description: The shared-memory mount NCCL uses.
    type: path
    default: /dev/shm
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
"""

EXAMPLES = r"""
- name: Find the container's limits
  ncclkit.cluster.nccl_container:
    gpu_count: "{{ nccl_preflight_gpus | length }}"
"""

RETURN = r"""
ansible_facts:
  description: C(ncclkit_container).
  returned: success
  type: dict
  contains:
    ncclkit_container:
      description: What the host allows, and the adaptations it forces.
      type: dict
      sample:
        pid1: sshd
        systemd: false
        proc_sys_writable: false
        net_admin: false
        firewall_possible: false
        in_container: true
        shm_bytes: 67108864
        gpu_count: 2
        shm_required_bytes: 167772160
        shm_ok: false
        ip_local_port_range: [32768, 60999]
        network_turbo: true
        download_env: {http_proxy: "http://172.20.0.113:12798", https_proxy: "http://172.20.0.113:12798"}
        download_env_problems: []
        data_dir: /root/autodl-tmp
        adaptations: ["/proc/sys is read-only: ip_local_port_range is not pinned; ..."]
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ncclkit.cluster.plugins.module_utils.host.container import container_facts


def main():
    module = AnsibleModule(
        argument_spec={
            "gpu_count": {"type": "int", "default": 0},
            "data_dir_candidates": {"type": "list", "elements": "path", "default": ["/root/autodl-tmp"]},
            "network_turbo_path": {"type": "path", "default": "/etc/network_turbo"},
            "proc_root": {"type": "path", "default": "/proc"},
            "root": {"type": "path", "default": "/"},
            "shm_path": {"type": "path", "default": "/dev/shm"},
        },
        supports_check_mode=True,
    )
    params = module.params
    if params["gpu_count"] < 0:
        module.fail_json(msg=f"gpu_count is {params['gpu_count']}: give the number of GPUs (0 or more)")
    facts = container_facts(
        gpu_count=params["gpu_count"], proc_root=params["proc_root"], root=params["root"],
        shm_path=params["shm_path"], data_dir_candidates=params["data_dir_candidates"],
        network_turbo_path=params["network_turbo_path"])
    module.exit_json(changed=False, ansible_facts={"ncclkit_container": facts})


if __name__ == "__main__":
    main()
