#!/usr/bin/python
# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Read the EC2 instance id, zone and interfaces from IMDSv2 on the host."""

from __future__ import annotations

DOCUMENTATION = r"""
module: nccl_aws_imds
short_description: Read this EC2 instance's id, availability zone and interfaces from IMDSv2
description:
  - Asks the instance metadata service for a session token (IMDSv2, C(PUT /latest/api/token))
    and then reads C(instance-id), C(placement/availability-zone) and each interface's id and
    device number under C(network/interfaces/macs/).
  - Off EC2 (or with IMDS disabled) it fails in one line naming the fix, after a short timeout.
  - Only reads; it changes nothing on the host. Uses the Python standard library only.
version_added: 0.1.0
author: ncclkit maintainers (!UNKNOWN)
options:
  endpoint:
    description: Base URL of the metadata service.
    type: str
    default: http://169.254.169.254
  timeout:
    description: Seconds each request may take.
    type: float
    default: 2.0
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
"""

EXAMPLES = r"""
- name: Read the instance identity
  ncclkit.cluster.nccl_aws_imds:
  register: __cloud_aws_imds
"""

RETURN = r"""
instance:
  description: The instance's identity.
  returned: success
  type: dict
  sample:
    instance_id: i-0123456789abcdef0
    availability_zone: us-east-1a
    region: us-east-1
    interfaces: [{mac: "0e:12:34:56:78:9a", interface_id: eni-0123456789abcdef0, device_number: 0}]
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ncclkit.cluster.plugins.module_utils.clouds.aws.imds import ImdsError, read_instance


def main():
    module = AnsibleModule(
        argument_spec={"endpoint": {"type": "str", "default": "http://169.254.169.254"},
                       "timeout": {"type": "float", "default": 2.0}},
        supports_check_mode=True)
    try:
        instance = read_instance(module.params["endpoint"], module.params["timeout"])
    except ImdsError as error:
        module.fail_json(msg=str(error))
    module.exit_json(changed=False, instance=instance)


if __name__ == "__main__":
    main()
