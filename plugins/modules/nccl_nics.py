#!/usr/bin/python
# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Read the host's NICs from the kernel (rtnetlink), without iproute2."""

from __future__ import annotations

DOCUMENTATION = r"""
module: nccl_nics
short_description: Read the host's NICs, IPv4 addresses, MTUs and default route
description:
  - Asks the kernel over rtnetlink for every interface of the host's network namespace, its IPv4
    addresses with their prefix lengths, its MTU, the largest MTU the driver takes (C(max_mtu), 0 where
    the kernel does not say) and flags, and which interface holds the IPv4
    default route of the main table.
  - Needs no iproute2, which many GPU container images (AutoDL's among them) lack.
  - Only reads; it changes nothing on the host.
  - Deprecated - M(ncclkit.cluster.nccl_host_survey) returns the same list (C(nccl_preflight_nics),
    the same reader) with the rest of the host in one run.
version_added: 0.1.0
author: ncclkit maintainers (!UNKNOWN)
deprecated:
  removed_in: 1.0.0
  why: No role uses it; nccl_host_survey reads the NICs with the same code in the run that reads the rest of the host.
  alternative: Use M(ncclkit.cluster.nccl_host_survey) and its C(nccl_preflight_nics) fact.
extends_documentation_fragment:
  - ncclkit.cluster.attributes
options: {}
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
"""

EXAMPLES = r"""
- name: Read the NICs
  ncclkit.cluster.nccl_nics:
  register: __nccl_preflight_read_nics
"""

RETURN = r"""
nics:
  description: The interfaces in index order.
  returned: success
  type: list
  elements: dict
  sample:
    - {name: eth1, ipv4: [{address: 10.0.0.11, prefix: 24}], mtu: 9000, max_mtu: 9216, up: true, loopback: false, default_route: false}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ncclkit.cluster.plugins.module_utils.host.nics import NicReadError, read_nics


def main():
    module = AnsibleModule(argument_spec={}, supports_check_mode=True)
    try:
        nics = read_nics()
    except NicReadError as error:
        module.fail_json(msg=f"{error}; is this a Linux host?")
    module.exit_json(changed=False, nics=nics)


if __name__ == "__main__":
    main()
