"""Alibaba ECS security groups (clouds.alibaba.ecs_plan) by the API reference's rules: every group on the
interface merged, the lowest Priority number wins and Drop wins a tie
(https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-authorizesecuritygroupegress);
enterprise groups deny inbound and outbound by default
(https://www.alibabacloud.com/help/en/ecs/user-guide/security-group-rules)."""

from __future__ import annotations

from ansible_collections.ncclkit.cluster.plugins.module_utils.clouds.alibaba.ecs_plan import ecs_plan

CIDR = "172.16.0.0/24"


def instances(*groups_each):
    return {f"i-{n}": {"EnableJumboFrame": True, "SecurityGroupIds": {"SecurityGroupId": list(groups)}}
            for n, groups in enumerate(groups_each, 1)}


def group(*permissions, kind="normal", inner="Drop"):
    return {"SecurityGroupType": kind, "InnerAccessPolicy": inner, "Permissions": {"Permission": list(permissions)}}


def rule(policy="Accept", ports="32768/60999", peer=CIDR, priority="1", direction="ingress", proto="TCP"):
    key = ("SourceGroupId" if direction == "ingress" else "DestGroupId") if peer.startswith("sg-") else (
        "SourceCidrIp" if direction == "ingress" else "DestCidrIp")
    return {"Direction": direction, "Policy": policy, "PortRange": ports, key: peer, "Priority": priority,
            "IpProtocol": proto}


def plan(insts, groups):
    return ecs_plan(insts, groups, CIDR, [32768, 60999], [29500], "cn-hangzhou")


def test_an_enterprise_group_needs_egress_rules_too():
    found = plan(instances(["sg-e"], ["sg-e"]), {"sg-e": group(kind="enterprise", inner="Accept")})
    only = found["groups"][0]
    assert only["type"] == "enterprise" and only["inner_accept"] is False   # enterprise: no intra-group default
    assert [r["PortRange"] for r in only["missing"]] == ["32768/60999", "29500/29500"]
    assert [r["PortRange"] for r in only["missing_egress"]] == ["32768/60999", "29500/29500"]
    assert only["missing_egress"][0]["DestCidrIp"] == CIDR
    assert any("aliyun ecs AuthorizeSecurityGroupEgress --RegionId cn-hangzhou --SecurityGroupId sg-e --IpProtocol TCP "
               "--PortRange 32768/60999 --DestCidrIp 172.16.0.0/24" in line for line in found["findings"])
    # A basic group lets everything out by default: ingress only.
    basic = plan(instances(["sg-b"], ["sg-b"]), {"sg-b": group()})["groups"][0]
    assert basic["missing_egress"] == [] and len(basic["missing"]) == 2


def test_a_wider_cidr_and_a_shared_source_group_cover():
    vpc = group(rule(ports="1/65535", peer="172.16.0.0/12"))
    assert plan(instances(["sg-1"], ["sg-1"]), {"sg-1": vpc})["groups"][0]["missing"] == []
    by_group = group(rule(proto="ALL", ports="-1/-1", peer="sg-1"))
    assert plan(instances(["sg-1"], ["sg-1"]), {"sg-1": by_group})["groups"][0]["missing"] == []
    # A group only one instance is in does not take in the cluster.
    split = plan(instances(["sg-1", "sg-2"], ["sg-1"]), {"sg-1": group(), "sg-2": group(rule(peer="sg-2"))})
    assert len(split["groups"][0]["missing"]) == 2


def test_rules_of_every_group_on_the_interface_count():
    # sg-2 (second on both instances) admits the cluster: nothing is missing in sg-1.
    found = plan(instances(["sg-1", "sg-2"], ["sg-1", "sg-2"]),
                 {"sg-1": group(), "sg-2": group(rule(ports="1/65535"))})
    assert all(entry["missing"] == [] for entry in found["groups"])


def test_a_drop_at_priority_one_blocks_and_is_reported():
    # Drop and Accept both at priority 1 in different groups: Drop wins the tie.
    groups = {"sg-1": group(rule(ports="1/65535")), "sg-2": group(rule(policy="Drop", ports="40000/40010"))}
    found = plan(instances(["sg-1", "sg-2"], ["sg-1", "sg-2"]), groups)
    assert found["blocked"] and found["blocked"][0].startswith(
        "i-1: ingress TCP 32768/60999 from 172.16.0.0/24 is dropped by Drop TCP 40000/40010 from 172.16.0.0/24 "
        "priority 1 in sg-2")
    assert any(line in found["findings"] for line in found["blocked"])


def test_an_accept_outranks_a_drop_with_a_higher_number_and_one_is_added_where_none_does():
    drop = rule(policy="Drop", ports="1/65535", peer="0.0.0.0/0", priority="100")
    drop_later = group(drop)
    found = plan(instances(["sg-1"], ["sg-1"]), {"sg-1": group(rule(ports="1/65535"), drop)})
    assert found["blocked"] == [] and found["groups"][0]["missing"] == []
    # No Accept yet: the added one (priority 1) will win over the Drop of 100.
    found = plan(instances(["sg-1"], ["sg-1"]), {"sg-1": drop_later})
    assert found["blocked"] == [] and len(found["groups"][0]["missing"]) == 2
    assert found["groups"][0]["missing"][0]["Priority"] == "1"


def test_a_rule_two_instances_need_is_planned_once():
    found = plan(instances(["sg-1"], ["sg-1"], ["sg-1"]), {"sg-1": group(kind="enterprise")})
    assert len(found["groups"][0]["missing"]) == 2 and len(found["groups"][0]["missing_egress"]) == 2


# -- eRDMA (ERI) and deployment sets --------------------------------------------------------------
def test_an_instance_without_an_eri_interface_is_named():
    from ansible_collections.ncclkit.cluster.plugins.module_utils.clouds.alibaba.ecs_plan import eri_findings

    lines = eri_findings({"i-1": [{"NetworkInterfaceId": "eni-1", "NetworkInterfaceTrafficMode": "HighPerformance"}],
                          "i-2": [{"NetworkInterfaceId": "eni-2", "NetworkInterfaceTrafficMode": "Standard"}]})
    assert lines == [lines[0]] and lines[0].startswith("i-2: no network interface has ERI on")
    assert "eni-2 Standard" in lines[0]


def test_deployment_sets_low_latency_together_or_named():
    from ansible_collections.ncclkit.cluster.plugins.module_utils.clouds.alibaba.ecs_plan import deployment_findings

    together = [{"DeploymentSetId": "ds-1", "Strategy": "LowLatency", "InstanceIds": {"InstanceId": ["i-1", "i-2"]}}]
    assert deployment_findings(["i-1", "i-2"], together) == []
    spread = [{"DeploymentSetId": "ds-2", "Strategy": "Availability", "InstanceIds": {"InstanceId": ["i-1"]}}]
    lines = deployment_findings(["i-1", "i-2"], spread)
    assert "ds-2 with strategy Availability, which spreads instances apart" in lines[0]
    assert lines[1].startswith("i-2 is in no deployment set")
    apart = [{"DeploymentSetId": f"ds-{n}", "Strategy": "LowLatency", "InstanceIds": {"InstanceId": [f"i-{n}"]}}
             for n in (1, 2)]
    assert deployment_findings(["i-1", "i-2"], apart) == [
        "the instances are in 2 different LowLatency deployment sets (ds-1, ds-2): one set keeps them together"]
