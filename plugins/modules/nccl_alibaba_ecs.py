#!/usr/bin/python
# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Audit (and with apply, fix) what Alibaba Cloud's ECS API holds for an NCCL cluster."""

from __future__ import annotations

DOCUMENTATION = r"""
module: nccl_alibaba_ecs
short_description: Audit jumbo frames and security group rules of an Alibaba Cloud ECS cluster
description:
  - Runs on the controller, once for the cluster. Reads each instance's attributes
    (DescribeInstanceAttribute - EnableJumboFrame, SecurityGroupIds), each of their security
    groups (DescribeSecurityGroupAttribute - InnerAccessPolicy, Permissions in both directions)
    and the groups' types (DescribeSecurityGroups - normal or enterprise) through Alibaba Cloud's
    official ECS SDK (alibabacloud_ecs20140526).
  - The rules of every group on an instance are merged as ECS does - the lowest Priority number
    wins, Drop wins a tie; an Accept covers with a CIDR that holds the cluster CIDR or a group
    every instance is in. With no matching rule a normal group admits its own members when
    intra-group access is Accept and lets everything out; an enterprise group drops both ways.
  - The cluster needs TCP on NCCL's port range and the rendezvous ports from the cluster CIDR
    (and to it, where outbound is not open); with O(mode=apply) the missing rules are added
    (AuthorizeSecurityGroup, AuthorizeSecurityGroupEgress) at priority 1 in each instance's first
    group, once - a second run sends no write. Existing rules are never changed or removed, so a
    Drop rule of priority 1 that closes the path is reported, and apply then fails without a write.
  - Deployment sets are audited (DescribeDeploymentSets) - the cluster belongs together in one
    set with strategy C(LowLatency); the default C(Availability) strategy spreads instances apart.
    With O(erdma), each instance must have an interface with ERI on.
  - Jumbo frames are only audited (changing them may restart an instance, which is never done).
  - Credentials come from the environment only (ALIBABA_CLOUD_ACCESS_KEY_ID,
    ALIBABA_CLOUD_ACCESS_KEY_SECRET, optionally ALIBABA_CLOUD_SECURITY_TOKEN) and are handed to
    the SDK explicitly, so the SDK never asks the instance metadata service; they never appear in
    results or logs.
version_added: 0.2.0
author: ncclkit maintainers (!UNKNOWN)
options:
  region:
    description: The region of the instances (for example C(cn-hangzhou)).
    type: str
    required: true
  instance_ids:
    description: The cluster's instance ids.
    type: list
    elements: str
    required: true
  cluster_cidr:
    description: The cluster network the ingress rules admit.
    type: str
    required: true
  port_range:
    description: NCCL's port range, [low, high].
    type: list
    elements: int
    required: true
  rendezvous_ports:
    description: The rendezvous ports (torchrun's master port and others).
    type: list
    elements: int
    default: [29500]
  mode:
    description: C(audit) reads only; C(apply) adds the missing rules.
    type: str
    choices: [audit, apply]
    default: audit
  endpoint:
    description: The ECS API endpoint; empty for C(ecs.<region>.aliyuncs.com).
    type: str
    default: ""
  erdma:
    description:
      - The hosts have eRDMA devices; check that each instance has an interface with ERI on
        (DescribeNetworkInterfaces NetworkInterfaceTrafficMode C(HighPerformance)).
    type: bool
    default: false
  protocol:
    description: HTTPS, or HTTP for a stand-in on loopback.
    type: str
    choices: [HTTPS, HTTP]
    default: HTTPS
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
"""

EXAMPLES = r"""
- name: Audit the ECS side of the cluster
  ncclkit.cluster.nccl_alibaba_ecs:
    region: cn-hangzhou
    instance_ids: [i-bp1a, i-bp1b]
    cluster_cidr: 172.16.0.0/24
    port_range: [32768, 60999]
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
jumbo_frames:
  description: Whether every instance has jumbo frames on (true/false), or null when they differ or are unknown.
  returned: success
  type: bool
groups:
  description: Per security group - C(group), C(type) (normal or enterprise), C(inner_accept), C(missing)
    ingress rules, C(missing_egress) rules, C(blocked) lines and a C(message).
  returned: success
  type: list
  elements: dict
findings:
  description: One line per missing piece, each with the command that fixes it.
  returned: success
  type: list
  elements: str
blocked:
  description: >-
    One line per cluster path that a Drop rule of priority 1 closes (no added rule can outrank it);
    apply fails while there is one.
  returned: success
  type: list
  elements: str
added:
  description: The rules added (apply only), each with its C(SecurityGroupId) and C(Direction).
  returned: success
  type: list
  elements: dict
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible_collections.ncclkit.cluster.plugins.module_utils.clouds.alibaba.ecs_plan import (
    deployment_findings,
    ecs_plan,
    eri_findings,
)

try:
    from alibabacloud_ecs20140526 import models as ecs_models
    from alibabacloud_ecs20140526.client import Client
    from alibabacloud_tea_openapi import models as openapi_models
    HAS_SDK = True
except ImportError:
    HAS_SDK = False

CREDENTIAL_VARIABLES = ("ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET")
READ_ACTIONS = ("ecs:DescribeInstanceAttribute", "ecs:DescribeSecurityGroupAttribute", "ecs:DescribeSecurityGroups",
                "ecs:DescribeDeploymentSets", "ecs:DescribeNetworkInterfaces")
WRITE_ACTIONS = ("ecs:AuthorizeSecurityGroup", "ecs:AuthorizeSecurityGroupEgress")


def client(module):
    key, secret = (os.environ.get(name, "") for name in CREDENTIAL_VARIABLES)
    if not key or not secret:
        module.fail_json(msg="no Alibaba Cloud credentials: export ALIBABA_CLOUD_ACCESS_KEY_ID and "
                             "ALIBABA_CLOUD_ACCESS_KEY_SECRET (a RAM user allowed "
                             f"{', '.join(READ_ACTIONS + WRITE_ACTIONS)}) on the controller")
    region = module.params["region"]
    config = openapi_models.Config(
        access_key_id=key, access_key_secret=secret,
        security_token=os.environ.get("ALIBABA_CLOUD_SECURITY_TOKEN") or None,
        region_id=region, endpoint=module.params["endpoint"] or f"ecs.{region}.aliyuncs.com",
        protocol=module.params["protocol"], connect_timeout=5000, read_timeout=15000)
    return Client(config)


def call(module, what, function):
    """One API call; an SDK error becomes one line naming the call and the fix, never the credentials."""
    try:
        return function().body.to_map()
    except Exception as error:   # the SDK raises its own TeaException family and network errors
        code = getattr(error, "code", "") or type(error).__name__
        message = str(getattr(error, "message", "") or error).splitlines()[0][:300]
        hint = {"InvalidAccessKeyId.NotFound": "check ALIBABA_CLOUD_ACCESS_KEY_ID",
                "SignatureDoesNotMatch": "check ALIBABA_CLOUD_ACCESS_KEY_SECRET",
                "Forbidden.RAM": f"allow the RAM user {', '.join(READ_ACTIONS + WRITE_ACTIONS)}",
                "InvalidInstanceId.NotFound": "check the instance ids (alibaba_instance_id) and the region"}.get(
                    code, "check the region, the instance ids and the credentials")
        module.fail_json(msg=f"{what} failed: {code}: {message}; {hint}")


def deployment_sets(module, ecs, region):
    """Every deployment set of the region (DescribeDeploymentSets, page by page)."""
    found, page = [], 1
    while True:
        request = ecs_models.DescribeDeploymentSetsRequest(region_id=region, page_number=page, page_size=50)
        answer = call(module, "DescribeDeploymentSets", lambda: ecs.describe_deployment_sets(request))
        found += (answer.get("DeploymentSets") or {}).get("DeploymentSet") or []
        if page * 50 >= int(answer.get("TotalCount") or 0):
            return found
        page += 1


def main():
    module = AnsibleModule(
        argument_spec={
            "region": {"type": "str", "required": True},
            "instance_ids": {"type": "list", "elements": "str", "required": True},
            "cluster_cidr": {"type": "str", "required": True},
            "port_range": {"type": "list", "elements": "int", "required": True},
            "rendezvous_ports": {"type": "list", "elements": "int", "default": [29500]},
            "mode": {"type": "str", "choices": ["audit", "apply"], "default": "audit"},
            "endpoint": {"type": "str", "default": ""},
            "protocol": {"type": "str", "choices": ["HTTPS", "HTTP"], "default": "HTTPS"},
            "erdma": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    if not HAS_SDK:
        module.fail_json(msg=missing_required_lib("alibabacloud-ecs20140526 (pip install 'ncclkit[alibaba]')"))
    params = module.params
    if len(params["port_range"]) != 2:
        module.fail_json(msg=f"port_range is {params['port_range']}: give [low, high]")
    ecs = client(module)
    region = params["region"]
    instances = {}
    for instance_id in params["instance_ids"]:
        request = ecs_models.DescribeInstanceAttributeRequest(instance_id=instance_id)
        instances[instance_id] = call(module, f"DescribeInstanceAttribute {instance_id}",
                                      lambda: ecs.describe_instance_attribute(request))
    group_ids = sorted({group for attributes in instances.values()
                        for group in (attributes.get("SecurityGroupIds") or {}).get("SecurityGroupId") or []})
    groups = {}
    for group_id in group_ids:
        request = ecs_models.DescribeSecurityGroupAttributeRequest(region_id=region, security_group_id=group_id,
                                                                   direction="all")
        groups[group_id] = call(module, f"DescribeSecurityGroupAttribute {group_id}",
                                lambda: ecs.describe_security_group_attribute(request))
    if group_ids:
        # The group's type (normal or enterprise) decides what no rule means in each direction.
        request = ecs_models.DescribeSecurityGroupsRequest(region_id=region, security_group_ids=json.dumps(group_ids),
                                                           max_results=100)
        listed = call(module, "DescribeSecurityGroups", lambda: ecs.describe_security_groups(request))
        for entry in (listed.get("SecurityGroups") or {}).get("SecurityGroup") or []:
            if entry.get("SecurityGroupId") in groups:
                groups[entry["SecurityGroupId"]]["SecurityGroupType"] = entry.get("SecurityGroupType") or "normal"
    plan = ecs_plan(instances, groups, params["cluster_cidr"], params["port_range"], params["rendezvous_ports"],
                    region)
    plan["findings"] += deployment_findings(params["instance_ids"], deployment_sets(module, ecs, region))
    if params["erdma"]:
        interfaces = {}
        for instance_id in params["instance_ids"]:
            request = ecs_models.DescribeNetworkInterfacesRequest(region_id=region, instance_id=instance_id,
                                                                  page_size=100)
            answer = call(module, f"DescribeNetworkInterfaces {instance_id}",
                          lambda: ecs.describe_network_interfaces(request))
            interfaces[instance_id] = (answer.get("NetworkInterfaceSets") or {}).get("NetworkInterfaceSet") or []
        plan["findings"] += eri_findings(interfaces)
    missing = [(group["group"], "ingress", rule) for group in plan["groups"] for rule in group["missing"]]
    missing += [(group["group"], "egress", rule) for group in plan["groups"] for rule in group["missing_egress"]]
    if params["mode"] == "apply" and plan["blocked"]:
        # Adding rules would not open the path: say so instead of reporting success.
        module.fail_json(msg="apply cannot open the cluster's traffic: " + "; ".join(plan["blocked"]) +
                         ". Nothing was changed.", findings=plan["findings"], groups=plan["groups"])
    added = []
    if params["mode"] == "apply" and missing and not module.check_mode:
        for group_id, direction, rule in missing:
            if direction == "ingress":
                permission = ecs_models.AuthorizeSecurityGroupRequestPermissions(
                    ip_protocol=rule["IpProtocol"], port_range=rule["PortRange"], source_cidr_ip=rule["SourceCidrIp"],
                    policy=rule["Policy"], priority=rule["Priority"], description=rule["Description"])
                request = ecs_models.AuthorizeSecurityGroupRequest(region_id=region, security_group_id=group_id,
                                                                   permissions=[permission])
                call(module, f"AuthorizeSecurityGroup {group_id}", lambda: ecs.authorize_security_group(request))
            else:
                permission = ecs_models.AuthorizeSecurityGroupEgressRequestPermissions(
                    ip_protocol=rule["IpProtocol"], port_range=rule["PortRange"], dest_cidr_ip=rule["DestCidrIp"],
                    policy=rule["Policy"], priority=rule["Priority"], description=rule["Description"])
                request = ecs_models.AuthorizeSecurityGroupEgressRequest(region_id=region, security_group_id=group_id,
                                                                         permissions=[permission])
                call(module, f"AuthorizeSecurityGroupEgress {group_id}",
                     lambda: ecs.authorize_security_group_egress(request))
            added.append(dict(rule, SecurityGroupId=group_id, Direction=direction))
    module.exit_json(changed=params["mode"] == "apply" and bool(missing), jumbo_frames=plan["jumbo_frames"],
                     groups=plan["groups"], findings=plan["findings"], blocked=plan["blocked"], added=added)


if __name__ == "__main__":
    main()
