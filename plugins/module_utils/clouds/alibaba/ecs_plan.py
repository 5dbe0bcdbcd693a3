"""What cloud_alibaba decides from the ECS API's answers: jumbo frames, and the security group rules
that let the cluster's NCCL traffic in.

Pure Python: the nccl_alibaba_ecs module feeds it DescribeInstanceAttribute and
DescribeSecurityGroupAttribute answers (as dicts, the API's own field names) and sends what it
plans; tests feed it the same dicts.
"""

from __future__ import annotations

# Added rules carry this description, so a person reading the group knows whose they are.
RULE_DESCRIPTION = "ncclkit: NCCL between cluster hosts"


def jumbo_frames(instances: dict):
    """True or False when every instance says the same, None when unknown or mixed."""
    values = set()
    for attributes in instances.values():
        value = attributes.get("EnableJumboFrame")
        if value is None:
            value = (attributes.get("NetworkOptions") or {}).get("EnableJumboFrame")
        values.add(value)
    return values.pop() if len(values) == 1 and None not in values else None


def security_groups(instances: dict) -> dict:
    """{group id: [instance ids]} from each instance's SecurityGroupIds."""
    groups: dict = {}
    for instance_id, attributes in sorted(instances.items()):
        for group in (attributes.get("SecurityGroupIds") or {}).get("SecurityGroupId") or []:
            groups.setdefault(group, []).append(instance_id)
    return groups


def wanted_rules(cluster_cidr: str, port_range, rendezvous_ports) -> list:
    """The ingress rules the cluster needs: TCP on NCCL's range and each rendezvous port, from the cluster CIDR."""
    low, high = (int(port) for port in port_range)
    ranges = [f"{low}/{high}"] + [f"{int(port)}/{int(port)}" for port in rendezvous_ports
                                  if not low <= int(port) <= high]
    return [{"IpProtocol": "TCP", "PortRange": port, "SourceCidrIp": cluster_cidr, "Policy": "accept",
             "Description": RULE_DESCRIPTION} for port in ranges]


def _covers(existing: dict, rule: dict) -> bool:
    if existing.get("Direction", "ingress") != "ingress" or str(existing.get("Policy", "Accept")).lower() != "accept":
        return False
    if str(existing.get("IpProtocol", "")).upper() not in ("TCP", "ALL"):
        return False
    if existing.get("SourceCidrIp") not in (rule["SourceCidrIp"], "0.0.0.0/0"):
        return False
    try:
        have_low, have_high = (int(port) for port in str(existing.get("PortRange", "")).split("/"))
        low, high = (int(port) for port in rule["PortRange"].split("/"))
    except ValueError:
        return False
    return have_low <= low and high <= have_high or (have_low, have_high) == (-1, -1)


def group_plan(group_id: str, attributes: dict, rules: list, members: list, all_instances: list) -> dict:
    """{group, inner_accept, missing: [rules], message} for one security group."""
    inner_accept = str(attributes.get("InnerAccessPolicy", "")).lower() == "accept"
    if inner_accept and sorted(members) == sorted(all_instances):
        return {"group": group_id, "inner_accept": True, "missing": [],
                "message": f"{group_id}: intra-group access is Accept and every cluster instance is in it: "
                           "NCCL's traffic between them needs no rule"}
    permissions = (attributes.get("Permissions") or {}).get("Permission") or []
    missing = [rule for rule in rules if not any(_covers(existing, rule) for existing in permissions)]
    return {"group": group_id, "inner_accept": inner_accept, "missing": missing,
            "message": f"{group_id}: {len(missing)} ingress rule(s) missing for the cluster" if missing
            else f"{group_id}: the cluster's ingress rules are there"}


def fix_command(group_id: str, region: str, rule: dict) -> str:
    """The aliyun CLI line that adds `rule` (what audit prints)."""
    return (f"aliyun ecs AuthorizeSecurityGroup --RegionId {region} --SecurityGroupId {group_id} "
            f"--IpProtocol {rule['IpProtocol']} --PortRange {rule['PortRange']} "
            f"--SourceCidrIp {rule['SourceCidrIp']} --Policy accept --Description '{rule['Description']}'")


def ecs_plan(instances: dict, groups: dict, cluster_cidr: str, port_range, rendezvous_ports, region: str) -> dict:
    """{jumbo_frames, groups: [group_plan], findings: [lines with the fix]}."""
    rules = wanted_rules(cluster_cidr, port_range, rendezvous_ports)
    members = security_groups(instances)
    plans = [group_plan(group, groups.get(group) or {}, rules, ids, list(instances)) for group, ids in sorted(members.items())]
    findings = []
    jumbo = jumbo_frames(instances)
    if jumbo is None:
        states = {instance: attributes.get("EnableJumboFrame") for instance, attributes in sorted(instances.items())}
        findings.append(f"jumbo frames differ or are unknown across the instances ({states}): give every instance the "
                        "same setting (ECS console: the instance's network settings; API ModifyInstanceAttribute "
                        "EnableJumboFrame, which may need the instance stopped)")
    elif jumbo is False:
        findings.append("jumbo frames are off on every instance: the MTU stays 1500 (1400 on eRDMA); turn them on "
                        "(ModifyInstanceAttribute EnableJumboFrame=true) for 8500")
    for plan in plans:
        findings += [f"{plan['group']}: missing ingress TCP {rule['PortRange']} from {rule['SourceCidrIp']}: "
                     f"{fix_command(plan['group'], region, rule)}" for rule in plan["missing"]]
    return {"jumbo_frames": jumbo, "groups": plans, "findings": findings}
