"""What cloud_alibaba decides from the ECS API's answers: jumbo frames, and the security group rules
that let the cluster's NCCL traffic in and out.

Pure Python: the nccl_alibaba_ecs module feeds it DescribeInstanceAttribute,
DescribeSecurityGroupAttribute (both directions) and DescribeSecurityGroups (the group's type)
answers, as dicts with the API's own field names, and sends what it plans; tests feed it the same dicts.

How ECS decides (the ECS API reference of AuthorizeSecurityGroup/AuthorizeSecurityGroupEgress and
the user guide's "Security group rules"): the rules of every group on an interface are merged and
the lowest Priority number wins (1-100, 1 when unset), a Drop rule winning a tie; with no rule that
matches, a basic ("normal") group admits its own members when InnerAccessPolicy is Accept and lets
everything out, while an enterprise group drops both directions. Enterprise groups take no group as
a rule's source or destination.
"""

from __future__ import annotations

import ipaddress

# Added rules carry this description, so a person reading the group knows whose they are.
RULE_DESCRIPTION = "ncclkit: NCCL between cluster hosts"
# The priority of the rules added here: the highest, so that only a Drop rule of priority 1 can beat them.
ADDED_PRIORITY = 1
DIRECTIONS = ("ingress", "egress")


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
        for group in _group_ids(attributes):
            groups.setdefault(group, []).append(instance_id)
    return groups


def _group_ids(attributes: dict) -> list:
    return list((attributes.get("SecurityGroupIds") or {}).get("SecurityGroupId") or [])


def wanted_rules(cluster_cidr: str, port_range, rendezvous_ports, direction: str = "ingress") -> list:
    """The rules the cluster needs in one direction: TCP on NCCL's range and each rendezvous port,
    from (ingress) or to (egress) the cluster CIDR."""
    low, high = (int(port) for port in port_range)
    ranges = [f"{low}/{high}"] + [f"{int(port)}/{int(port)}" for port in rendezvous_ports
                                  if not low <= int(port) <= high]
    peer = "SourceCidrIp" if direction == "ingress" else "DestCidrIp"
    return [{"IpProtocol": "TCP", "PortRange": port, peer: cluster_cidr, "Policy": "accept",
             "Priority": str(ADDED_PRIORITY), "Description": RULE_DESCRIPTION} for port in ranges]


def _ports(text):
    try:
        low, high = (int(port) for port in str(text).split("/"))
    except ValueError:
        return None
    return (0, 65535) if (low, high) == (-1, -1) else (low, high)


def _network(text):
    try:
        return ipaddress.ip_network(str(text), strict=False)
    except ValueError:
        return None


def _priority(permission: dict) -> int:
    try:
        return int(permission.get("Priority") or 1)
    except ValueError:
        return 1


def _peer_matches(permission: dict, direction: str, cluster, shared_groups, whole: bool) -> bool:
    """Whether the permission's source (ingress) or destination (egress) takes in the cluster's
    addresses (whole) or any of them (not whole): a CIDR, or a group every cluster instance is in."""
    cidr_key, group_key = ("SourceCidrIp", "SourceGroupId") if direction == "ingress" else ("DestCidrIp", "DestGroupId")
    if permission.get(group_key):
        return permission[group_key] in shared_groups
    network = _network(permission.get(cidr_key, ""))
    if network is None or network.version != cluster.version:
        return False
    return cluster.subnet_of(network) if whole else cluster.overlaps(network)


def _matches(permission: dict, rule: dict, direction: str, cluster, shared_groups, whole: bool) -> bool:
    if str(permission.get("Direction", "ingress")).lower() != direction:
        return False
    if str(permission.get("IpProtocol", "")).upper() not in ("TCP", "ALL"):
        return False
    have, want = _ports(permission.get("PortRange", "")), _ports(rule["PortRange"])
    if have is None or want is None:
        return False
    inside = have[0] <= want[0] and want[1] <= have[1]
    overlap = have[0] <= want[1] and want[0] <= have[1]
    return (inside if whole else overlap) and _peer_matches(permission, direction, cluster, shared_groups, whole)


def rule_verdict(permissions: list, rule: dict, direction: str, cluster_cidr: str, shared_groups=(),
                 default_accept: bool = False) -> dict:
    """{"verdict": accept|missing|blocked, "by": the deciding permission or None} for one rule over
    the merged permissions (each with its SecurityGroupId) of every group on an interface.

    An Accept counts when it covers the whole rule (a wider CIDR or a group all cluster instances
    share covers too); a Drop counts when it touches any of it. The lowest priority number wins,
    Drop on a tie."""
    cluster = ipaddress.ip_network(cluster_cidr, strict=False)
    accepts = [p for p in permissions if str(p.get("Policy", "Accept")).lower() == "accept"
               and _matches(p, rule, direction, cluster, shared_groups, True)]
    drops = [p for p in permissions if str(p.get("Policy", "")).lower() == "drop"
             and _matches(p, rule, direction, cluster, shared_groups, False)]
    best_accept = min(accepts, key=_priority) if accepts else None
    best_drop = min(drops, key=_priority) if drops else None
    if best_drop is not None and (best_accept is None or _priority(best_drop) <= _priority(best_accept)):
        # An added Accept of priority 1 wins over a Drop of a higher number; nothing wins over a Drop of 1.
        if _priority(best_drop) <= ADDED_PRIORITY:
            return {"verdict": "blocked", "by": best_drop}
        return {"verdict": "missing", "by": best_drop}
    if best_accept is not None or default_accept:
        return {"verdict": "accept", "by": best_accept}
    return {"verdict": "missing", "by": None}


def _rule_text(permission: dict) -> str:
    peer = (permission.get("SourceCidrIp") or permission.get("SourceGroupId") or permission.get("DestCidrIp")
            or permission.get("DestGroupId") or "?")
    return (f"{permission.get('Policy', '?')} {permission.get('IpProtocol', '?')} {permission.get('PortRange', '?')} "
            f"{'from' if str(permission.get('Direction', 'ingress')).lower() == 'ingress' else 'to'} {peer} "
            f"priority {_priority(permission)} in {permission.get('SecurityGroupId', '?')}")


def _is_enterprise(group: dict) -> bool:
    return str(group.get("SecurityGroupType", "normal")).lower() == "enterprise"


def instance_plan(instance_id: str, group_ids: list, groups: dict, rules: dict, cluster_cidr: str,
                  shared_groups, all_instances_in: dict) -> dict:
    """{"missing": {direction: [rules]}, "blocked": [lines]} for one instance's interface."""
    permissions = []
    for gid in group_ids:
        for permission in ((groups.get(gid) or {}).get("Permissions") or {}).get("Permission") or []:
            permissions.append(dict(permission, SecurityGroupId=gid))
    basic = [groups.get(gid) or {} for gid in group_ids if not _is_enterprise(groups.get(gid) or {})]
    inner_accept = any(str(group.get("InnerAccessPolicy", "")).lower() == "accept"
                       and all_instances_in.get(gid) for gid, group in ((g, groups.get(g) or {}) for g in group_ids)
                       if not _is_enterprise(group))
    default = {"ingress": inner_accept, "egress": len(basic) == len(group_ids)}
    missing, blocked = {"ingress": [], "egress": []}, []
    for direction in DIRECTIONS:
        for rule in rules[direction]:
            verdict = rule_verdict(permissions, rule, direction, cluster_cidr, shared_groups, default[direction])
            if verdict["verdict"] == "missing":
                missing[direction].append(rule)
            elif verdict["verdict"] == "blocked":
                blocked.append(f"{instance_id}: {direction} TCP {rule['PortRange']} "
                               f"{'from' if direction == 'ingress' else 'to'} {cluster_cidr} is dropped by "
                               f"{_rule_text(verdict['by'])}, which no added rule can outrank: remove it, narrow "
                               "it, or give it a priority number above every Accept for the cluster")
    return {"missing": missing, "blocked": blocked}


def group_plan(group_id: str, attributes: dict, missing: dict, blocked: list, members: list,
               all_instances: list) -> dict:
    """{group, type, inner_accept, missing (ingress rules), missing_egress, blocked, message} for one group."""
    inner_accept = str(attributes.get("InnerAccessPolicy", "")).lower() == "accept" and not _is_enterprise(attributes)
    kind = "enterprise" if _is_enterprise(attributes) else "normal"
    if blocked:
        message = f"{group_id}: the cluster's traffic is dropped by a rule no added rule can outrank"
    elif inner_accept and sorted(members) == sorted(all_instances) and not missing["ingress"]:
        message = (f"{group_id}: intra-group access is Accept and every cluster instance is in it: "
                   "NCCL's traffic between them needs no rule")
    elif missing["ingress"] or missing["egress"]:
        message = (f"{group_id}: {len(missing['ingress'])} ingress and {len(missing['egress'])} egress rule(s) "
                   "missing for the cluster")
    else:
        message = f"{group_id}: the cluster's rules are there"
    return {"group": group_id, "type": kind, "inner_accept": inner_accept, "missing": missing["ingress"],
            "missing_egress": missing["egress"], "blocked": blocked, "message": message}


def fix_command(group_id: str, region: str, rule: dict) -> str:
    """The aliyun CLI line that adds `rule` (what audit prints)."""
    if "DestCidrIp" in rule:
        verb, peer = "AuthorizeSecurityGroupEgress", f"--DestCidrIp {rule['DestCidrIp']}"
    else:
        verb, peer = "AuthorizeSecurityGroup", f"--SourceCidrIp {rule['SourceCidrIp']}"
    return (f"aliyun ecs {verb} --RegionId {region} --SecurityGroupId {group_id} "
            f"--IpProtocol {rule['IpProtocol']} --PortRange {rule['PortRange']} "
            f"{peer} --Policy accept --Priority {rule['Priority']} --Description '{rule['Description']}'")


def ecs_plan(instances: dict, groups: dict, cluster_cidr: str, port_range, rendezvous_ports, region: str) -> dict:
    """{jumbo_frames, groups: [group_plan], findings: [lines with the fix], blocked: [lines]}.

    A missing rule goes into the instance's first group, once however many instances need it."""
    rules = {direction: wanted_rules(cluster_cidr, port_range, rendezvous_ports, direction)
             for direction in DIRECTIONS}
    members = security_groups(instances)
    ids = list(instances)
    all_in = {gid: sorted(found) == sorted(ids) for gid, found in members.items()}
    # Groups every cluster instance is in: a rule naming one as its source or destination takes in the cluster.
    shared = {gid for gid, found in all_in.items() if found and not _is_enterprise(groups.get(gid) or {})}
    needs = {gid: {"ingress": [], "egress": []} for gid in members}
    blocked_by = {gid: [] for gid in members}
    for instance_id, attributes in sorted(instances.items()):
        group_ids = _group_ids(attributes)
        if not group_ids:
            continue
        plan = instance_plan(instance_id, group_ids, groups, rules, cluster_cidr, shared, all_in)
        blocked_by[group_ids[0]] += plan["blocked"]
        for direction in DIRECTIONS:
            for rule in plan["missing"][direction]:
                if rule not in needs[group_ids[0]][direction]:
                    needs[group_ids[0]][direction].append(rule)
    plans = [group_plan(gid, groups.get(gid) or {}, needs[gid], blocked_by[gid], found, ids)
             for gid, found in sorted(members.items())]
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
    blocked = [line for plan in plans for line in plan["blocked"]]
    for plan in plans:
        findings += [f"{plan['group']}: missing ingress TCP {rule['PortRange']} from {rule['SourceCidrIp']}: "
                     f"{fix_command(plan['group'], region, rule)}" for rule in plan["missing"]]
        findings += [f"{plan['group']}: missing egress TCP {rule['PortRange']} to {rule['DestCidrIp']} "
                     f"({plan['type']} group: outbound is denied unless a rule allows it): "
                     f"{fix_command(plan['group'], region, rule)}" for rule in plan["missing_egress"]]
    return {"jumbo_frames": jumbo, "groups": plans, "findings": findings + blocked, "blocked": blocked}


# eRDMA runs on an ENI whose NetworkInterfaceTrafficMode is HighPerformance (ERI on);
# DescribeNetworkInterfaces reports Standard for the others.
ERI_MODE = "HighPerformance"
# A deployment set of this strategy is Alibaba's counterpart of a cluster placement group.
LOW_LATENCY = "LowLatency"


def eri_findings(interfaces: dict) -> list:
    """{instance id: [DescribeNetworkInterfaces NetworkInterfaceSet entries]} -> one line per
    instance without an ERI-enabled interface (only asked where the hosts have eRDMA)."""
    lines = []
    for instance_id, nics in sorted(interfaces.items()):
        if not any(nic.get("NetworkInterfaceTrafficMode") == ERI_MODE for nic in nics or []):
            modes = ", ".join(f"{nic.get('NetworkInterfaceId', '?')} {nic.get('NetworkInterfaceTrafficMode') or '?'}"
                              for nic in nics or []) or "no interface listed"
            lines.append(f"{instance_id}: no network interface has ERI on (NetworkInterfaceTrafficMode "
                         f"{ERI_MODE}; found {modes}): eRDMA cannot carry NCCL there; attach an ERI-enabled "
                         "ENI (CreateNetworkInterface NetworkInterfaceTrafficMode=HighPerformance) or enable "
                         "eRDMA on the instance in the ECS console")
    return lines


def deployment_findings(instance_ids, deployment_sets: list) -> list:
    """DescribeDeploymentSets' sets (Strategy, InstanceIds) -> lines for instances that are not
    together in one LowLatency set."""
    where = {}
    for entry in deployment_sets or []:
        for instance_id in (entry.get("InstanceIds") or {}).get("InstanceId") or []:
            where[instance_id] = entry
    lines = []
    for instance_id in sorted(instance_ids):
        entry = where.get(instance_id)
        if entry is None:
            lines.append(f"{instance_id} is in no deployment set: nothing keeps the cluster close together; create "
                         f"one with strategy {LOW_LATENCY} (CreateDeploymentSet) and put the instances in it "
                         "(ModifyInstanceDeployment, which may need them stopped)")
        elif entry.get("Strategy") != LOW_LATENCY:
            lines.append(f"{instance_id} is in deployment set {entry.get('DeploymentSetId')} with strategy "
                         f"{entry.get('Strategy')}, which spreads instances apart: for NCCL use a {LOW_LATENCY} set")
    sets = {where[iid].get("DeploymentSetId") for iid in instance_ids if iid in where
            and where[iid].get("Strategy") == LOW_LATENCY}
    if len(sets) > 1:
        lines.append(f"the instances are in {len(sets)} different {LOW_LATENCY} deployment sets "
                     f"({', '.join(sorted(sets))}): one set keeps them together")
    return lines
