"""What an EC2 cluster lacks for NCCL, and the aws CLI command that fixes each piece.

Input is what amazon.aws's ec2_instance_info, ec2_security_group_info and
ec2_placement_group_info return (snake_case boto3 shapes). Pure functions: the cloud_aws
role's filter calls them, unit tests feed them recorded shapes.
"""

from __future__ import annotations

import ipaddress
import shlex

EFA_TYPES = ("efa", "efa-only")


class AwsPlanError(ValueError):
    """Input that cannot describe a cluster (a missing instance, a malformed port)."""


def _port(value, what):
    try:
        port = int(value)
    except (TypeError, ValueError):
        raise AwsPlanError(f"{what} is {value!r}, not a port; set it to a number 1-65535") from None
    if not 1 <= port <= 65535:
        raise AwsPlanError(f"{what} is {port}, not a port; set it to a number 1-65535")
    return port


def efa_groups(instance):
    """Security group ids of the instance's EFA interfaces (InterfaceType efa or efa-only)."""
    found = []
    for nic in instance.get("network_interfaces") or []:
        if nic.get("interface_type") in EFA_TYPES:
            for group in nic.get("groups") or []:
                if group["group_id"] not in found:
                    found.append(group["group_id"])
    return found


def _primary(instance):
    """The instance's primary interface (device index 0; the first listed when none says)."""
    nics = instance.get("network_interfaces") or []
    for nic in nics:
        if (nic.get("attachment") or {}).get("device_index") == 0:
            return nic
    return nics[0] if nics else {}


def primary_groups(instance):
    """Every security group of the primary interface: the rules of any of them apply to it."""
    found = [group["group_id"] for group in instance.get("security_groups") or []]
    found += [group["group_id"] for group in _primary(instance).get("groups") or []]
    return list(dict.fromkeys(found))


def attached_group_ids(instances):
    """Every security group attached to the instances (the instance's and each interface's), first
    seen first: the groups ec2_security_group_info must read."""
    found = []
    for instance in instances or []:
        found += [group["group_id"] for group in instance.get("security_groups") or []]
        for nic in instance.get("network_interfaces") or []:
            found += [group["group_id"] for group in nic.get("groups") or []]
    return list(dict.fromkeys(found))


def cluster_sides(instance):
    """The interfaces NCCL's traffic reaches, as (efa, groups): the EFA interfaces' groups (all
    traffic to and from the cluster), and the primary interface's groups for the TCP ports
    (bootstrap, rendezvous, SSH) unless the primary is an EFA interface, whose rules cover them."""
    sides = []
    efa = efa_groups(instance)
    if efa:
        sides.append((True, efa))
    if _primary(instance).get("interface_type") not in EFA_TYPES or not efa:
        groups = primary_groups(instance)
        if groups:
            sides.append((False, groups))
    return sides


def cluster_groups(instance):
    """The groups that get the missing rules: the first group of each side of cluster_sides."""
    return [groups[0] for _efa, groups in cluster_sides(instance)]


def required_rules(group_id, efa, port_range, master_port):
    """Rules a group needs, as dicts: direction in/out, proto tcp/-1, ports, source group, efa."""
    if efa:
        # EFA needs all traffic to and from the group itself, egress too, even beside 0.0.0.0/0.
        return [
            {"direction": direction, "proto": "-1", "from_port": None, "to_port": None, "group_id": group_id,
             "efa": True}
            for direction in ("in", "out")
        ]
    low, high = (_port(value, "the NCCL port range") for value in port_range)
    if low > high:
        raise AwsPlanError(f"the NCCL port range {low}-{high} is reversed; give [lowest, highest]")
    rules = []
    for first, last in ((low, high), (master_port, master_port), (22, 22)):
        rules.append({"direction": "in", "proto": "tcp", "from_port": first, "to_port": last, "group_id": group_id,
                      "efa": False})
    return rules


def _ports_cover(permission, rule):
    """Whether the permission's protocol and ports take in the rule's (-1 is every protocol and port)."""
    proto = str(permission.get("ip_protocol"))
    if proto == "-1":
        return True
    if rule["proto"] == "-1" or proto not in ("tcp", "6"):
        return False
    return permission.get("from_port", 0) <= rule["from_port"] and rule["to_port"] <= permission.get("to_port", -1)


def _covers(permission, rule):
    """Whether one existing permission admits the rule through a reference to its source group."""
    pairs = {pair.get("group_id") for pair in permission.get("user_id_group_pairs") or []}
    return rule["group_id"] in pairs and _ports_cover(permission, rule)


def _cidr_covers(permissions, rule, addresses):
    """Whether IPv4 CIDR rules on the rule's ports hold every address of the source group's members.

    Not for EFA (its traffic is admitted only by the self-referencing rules) and not when a
    member's address is unknown: a CIDR can only be shown to admit addresses we know."""
    if rule["efa"] or not addresses:
        return False
    networks = []
    for permission in permissions:
        if _ports_cover(permission, rule):
            for block in permission.get("ip_ranges") or []:
                try:
                    networks.append(ipaddress.ip_network(block.get("cidr_ip", ""), strict=False))
                except ValueError:
                    continue
    return all(any(address in network for network in networks) for address in addresses)


def missing_rules(group, rules, members=None):
    """The rules that none of the group's existing permissions admit.

    members: source group id -> the private addresses of the cluster instances in it (None where
    one is unknown), so that CIDR rules holding all of them count for the non-EFA rules."""
    members = members or {}
    return [rule for rule in rules
            if not admitted([group], rule, [rule["group_id"]], members.get(rule["group_id"]))]


def admitted(groups, rule, peer_groups, peer_addresses):
    """Whether any of the groups (the rules of all groups on an interface apply) admits the rule's
    traffic from (or to) a peer that is in peer_groups and has peer_addresses."""
    for group in groups:
        permissions = group.get("ip_permissions" if rule["direction"] == "in" else "ip_permissions_egress") or []
        for source in peer_groups:
            if any(_covers(perm, {**rule, "group_id": source}) for perm in permissions):
                return True
        if _cidr_covers(permissions, rule, peer_addresses):
            return True
    return False


def private_addresses(instance):
    """Every private IPv4 address of the instance (primary and each interface's); None when none is known."""
    found = [instance.get("private_ip_address")]
    for nic in instance.get("network_interfaces") or []:
        found.append(nic.get("private_ip_address"))
        found += [entry.get("private_ip_address") for entry in nic.get("private_ip_addresses") or []]
    try:
        addresses = {ipaddress.ip_address(value) for value in found if value}
    except ValueError:
        return None
    return sorted(addresses) or None


def _rule_text(rule, gid):
    ports = "all traffic" if rule["proto"] == "-1" else (
        f"TCP {rule['from_port']}" if rule["from_port"] == rule["to_port"]
        else f"TCP {rule['from_port']}-{rule['to_port']}")
    way = "inbound from" if rule["direction"] == "in" else "outbound to"
    other = "itself" if rule["group_id"] == gid else "(a group of other cluster instances)"
    return f"{ports} {way} {rule['group_id']} {other}"


def rule_command(region, group_id, rule):
    """The aws CLI command that adds one missing rule."""
    verb = "authorize-security-group-ingress" if rule["direction"] == "in" else "authorize-security-group-egress"
    if rule["proto"] == "-1":
        perms = f"IpProtocol=-1,UserIdGroupPairs=[{{GroupId={rule['group_id']}}}]"
    else:
        perms = (f"IpProtocol=tcp,FromPort={rule['from_port']},ToPort={rule['to_port']},"
                 f"UserIdGroupPairs=[{{GroupId={rule['group_id']}}}]")
    return shlex.join(["aws", "ec2", verb, "--region", region, "--group-id", group_id, "--ip-permissions", perms])


def module_rule(rule):
    """The rule as amazon.aws.ec2_security_group's rules/rules_egress entries take it."""
    entry = {"proto": "all" if rule["proto"] == "-1" else "tcp", "group_id": rule["group_id"],
             "rule_desc": "ncclkit: NCCL cluster traffic within the group"}
    if rule["proto"] != "-1":
        entry.update(from_port=rule["from_port"], to_port=rule["to_port"])
    return entry


def _name(instance):
    """"Name (i-...)" when the instance has a Name tag, else the id."""
    name = (instance.get("tags") or {}).get("Name")
    return f"{name} ({instance['instance_id']})" if name else instance["instance_id"]


def reserved_placement(instance):
    """What already places the instance, as words ("" when nothing does): a Capacity Block
    (InstanceLifecycle capacity-block) or a capacity reservation it runs in."""
    if instance.get("instance_lifecycle") == "capacity-block":
        return "a Capacity Block"
    reservation = instance.get("capacity_reservation_id")
    return f"capacity reservation {reservation}" if reservation else ""


def placement_findings(instances, groups, region, wanted):
    """Instances outside one cluster-strategy placement group, and the commands that fix it.

    groups: ec2_placement_group_info's placement_groups (name, strategy). wanted: the group the
    user names ("" to take the cluster group most of the instances already share)."""
    strategy = {group["name"]: group.get("strategy") for group in groups}
    in_group = {inst["instance_id"]: (inst.get("placement") or {}).get("group_name") or "" for inst in instances}
    names = [name for name in in_group.values() if name]
    # Unnamed: the cluster-strategy group most instances share (first seen wins a tie).
    shared = list(dict.fromkeys(names))
    target = wanted or (max(shared, key=lambda n: (strategy.get(n) == "cluster", names.count(n))) if names else "")
    findings, commands = [], []
    if target and target in strategy and strategy[target] != "cluster":
        findings.append(f"placement group {target} has strategy {strategy[target]}, not cluster; "
                        "NCCL across nodes wants cluster (a new group; instances move only when stopped)")
    if target and target not in strategy:
        findings.append(f"placement group {target} does not exist in {region}")
        commands.append(shlex.join(["aws", "ec2", "create-placement-group", "--region", region,
                                    "--group-name", target, "--strategy", "cluster"]))
    moved = []
    for inst in instances:
        if in_group[inst["instance_id"]] != target or not target:
            where = in_group[inst["instance_id"]] or "no placement group"
            reserved = reserved_placement(inst)
            if reserved:
                # Capacity already placed by AWS: a stop/move/start would give it up, not improve it.
                findings.append(f"instance {_name(inst)} is in {where}, not in {target or 'a cluster placement group'}, "
                                f"but runs in {reserved}: its capacity is placed by AWS (together, for a Capacity "
                                "Block or a reservation in a cluster placement group), so no move is offered")
                continue
            findings.append(f"instance {_name(inst)} is in {where}, not in "
                            f"{target or 'a cluster placement group'}")
            if target:
                moved.append(inst["instance_id"])
                commands.append(" && ".join(shlex.join(part) for part in (
                    ["aws", "ec2", "stop-instances", "--region", region, "--instance-ids", inst["instance_id"]],
                    ["aws", "ec2", "wait", "instance-stopped", "--region", region,
                     "--instance-ids", inst["instance_id"]],
                    ["aws", "ec2", "modify-instance-placement", "--region", region, "--instance-id",
                     inst["instance_id"], "--group-name", target],
                    ["aws", "ec2", "start-instances", "--region", region, "--instance-ids", inst["instance_id"]])))
    if moved:
        findings.append(f"moving {', '.join(moved)} stops and starts each: the start can fail with "
                        "InsufficientInstanceCapacity (the group has no room), and the data on instance-store "
                        "volumes is lost at the stop")
    return {"group": target, "findings": findings, "commands": commands,
            "create": bool(target) and target not in strategy}


def cluster_plan(instances, security_groups, wanted_ids, settings):
    """Everything the cluster lacks: per group the missing rules, messages, commands, module args.

    settings: region, port_range [low, high], master_port, placement_groups (info list),
    placement_group (wanted name or "")."""
    found = {inst["instance_id"] for inst in instances}
    unknown = [iid for iid in wanted_ids if iid not in found]
    if unknown:
        raise AwsPlanError(
            f"instance id(s) {', '.join(unknown)} not found in region {settings['region']}; check "
            "cloud_aws_region and the hosts' aws_instance_id (ec2:DescribeInstances)")
    by_id = {group["group_id"]: group for group in security_groups}
    region = settings["region"]
    master_port = _port(settings["master_port"], "the rendezvous port (MASTER_PORT)")
    for gid in dict.fromkeys(gid for inst in instances for _efa, groups in cluster_sides(inst) for gid in groups):
        if gid not in by_id:
            raise AwsPlanError(f"security group {gid} not found; ec2:DescribeSecurityGroups must see it")
    # Every side must admit every instance's same side (itself too): a group's self rule admits
    # only its own members, and the rules of every group on the interface count.
    need, missing_by_group = {}, {}
    for inst in instances:
        for efa, groups in cluster_sides(inst):
            target = groups[0]
            need.setdefault(target, [])
            missing_by_group.setdefault(target, [])
            for peer in instances:
                peer_groups = next((g for e, g in cluster_sides(peer) if e == efa), None)
                if peer_groups is None:
                    continue
                for rule in required_rules(peer_groups[0], efa, settings["port_range"], master_port):
                    if rule not in need[target]:
                        need[target].append(rule)
                    if rule not in missing_by_group[target] and not admitted(
                            [by_id[gid] for gid in groups], rule, peer_groups, private_addresses(peer)):
                        missing_by_group[target].append(rule)
    groups, messages, commands = [], [], []
    for gid in need:
        missing = missing_by_group[gid]
        for rule in missing:
            messages.append(f"security group {gid}: missing {_rule_text(rule, gid)}")
            commands.append(rule_command(region, gid, rule))
        group = by_id[gid]
        groups.append({
            "group_id": gid, "name": group.get("group_name"), "description": group.get("description"),
            "vpc_id": group.get("vpc_id"), "missing": len(missing),
            "rules": [module_rule(rule) for rule in missing if rule["direction"] == "in"],
            "rules_egress": [module_rule(rule) for rule in missing if rule["direction"] == "out"],
        })
    placement = placement_findings(instances, settings.get("placement_groups") or [], region,
                                   settings.get("placement_group") or "")
    return {
        "groups": groups,
        "missing_rules": messages,
        "commands": commands + placement["commands"],
        "placement": placement,
        "efa_instances": sorted(inst["instance_id"] for inst in instances if efa_groups(inst)),
        "problems": messages + placement["findings"],
    }


# The IAM actions each step needs; docs/clouds/aws.md has them as one policy.
READ_ACTIONS = ("ec2:DescribeInstances", "ec2:DescribeSecurityGroups", "ec2:DescribePlacementGroups")
APPLY_ACTIONS = ("ec2:AuthorizeSecurityGroupIngress", "ec2:AuthorizeSecurityGroupEgress",
                 "ec2:CreatePlacementGroup")


def error_line(message, region, actions):
    """One line naming the cause and the fix of a failed EC2 call (boto3's message in, no secrets out)."""
    text = str(message or "")
    needed = ", ".join(actions)
    if "Unable to locate credentials" in text or "NoCredentials" in text:
        return ("no AWS credentials on the controller: export AWS_PROFILE (or AWS_ACCESS_KEY_ID and "
                f"AWS_SECRET_ACCESS_KEY) or give it an instance role allowing {needed}")
    if any(code in text for code in ("AuthFailure", "InvalidClientTokenId", "SignatureDoesNotMatch",
                                     "UnrecognizedClient", "ExpiredToken")):
        return (f"AWS rejected the credentials in region {region} (wrong, expired, or the region is not "
                f"enabled for the account): renew them or fix cloud_aws_region; they need {needed}")
    if "UnauthorizedOperation" in text or "AccessDenied" in text:
        return f"the AWS credentials may not do this: allow {needed} (the policy in docs/clouds/aws.md)"
    if "InvalidInstanceID" in text:
        return (f"an instance id is not in region {region}: check cloud_aws_region and the hosts' "
                "aws_instance_id (ec2:DescribeInstances)")
    if "Could not connect to the endpoint URL" in text or "InvalidRegion" in text or "region" in text.lower():
        return f"region {region!r} does not answer: set cloud_aws_region to the instances' region"
    return f"the EC2 API failed in region {region} ({needed}): {text.splitlines()[0] if text else 'no message'}"
