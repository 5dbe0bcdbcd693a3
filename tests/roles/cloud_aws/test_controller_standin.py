"""cloud_aws on EFA instances and placement groups, through the model-checked EC2 stand-in.

The stand-in answers the instances (with their EFA interface types) and placement groups; for
the apply test it forwards the security-group calls to moto, which keeps the rules' state.
"""

from __future__ import annotations

import pytest

from .conftest import group_rules, make_cluster, rule_entries, run_role, write_inventory
from .ec2_standin import MODEL, Ec2StandIn, ModelError, validate_request
from .test_controller_moto import self_rules

WORLD_EGRESS = {"IpProtocol": "-1", "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}


def efa_instance(iid, name, kind, placement, group_id="sg-0efa"):
    group = [{"GroupId": group_id, "GroupName": "efa-cluster"}]
    return {"InstanceId": iid, "InstanceType": "p5.48xlarge", "State": {"Code": 16, "Name": "running"},
            "Placement": {"AvailabilityZone": "us-east-1a", "GroupName": placement},
            "Tags": [{"Key": "Name", "Value": name}], "SecurityGroups": group,
            "NetworkInterfaces": [{"NetworkInterfaceId": f"eni-{iid[2:]}", "InterfaceType": kind, "Groups": group,
                                   "Attachment": {"DeviceIndex": 0, "NetworkCardIndex": 0}}]}


def efa_group(ingress=(), egress=(WORLD_EGRESS,)):
    return {"GroupId": "sg-0efa", "GroupName": "efa-cluster", "Description": "EFA cluster", "VpcId": "vpc-0efa",
            "OwnerId": "123456789012", "IpPermissions": list(ingress), "IpPermissionsEgress": list(egress)}


SELF_ALL = {"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": "sg-0efa", "UserId": "123456789012"}]}
READS = {"DescribeInstances", "DescribeSecurityGroups", "DescribePlacementGroups"}


def test_efa_audit_names_self_rules_both_ways_and_the_stray_instance(credentials, tmp_path):
    instances = [efa_instance("i-0efa0001", "trainer-1", "efa", "nccl"),
                 efa_instance("i-0efa0002", "trainer-2", "efa-only", "")]
    placement = {"GroupName": "nccl", "Strategy": "cluster", "State": "available"}
    with Ec2StandIn(instances, [efa_group()], [placement]) as api:
        run = run_role(write_inventory(tmp_path / "hosts.yml", ["i-0efa0001", "i-0efa0002"]), api.url, credentials)
    assert run.rc == 0, run.output
    assert run.changed() == 0
    assert set(api.calls) == READS, api.calls
    assert "security group sg-0efa: missing all traffic inbound from sg-0efa itself" in run.output
    # The 0.0.0.0/0 egress rule does not stand in for the self-referencing one EFA needs.
    assert "security group sg-0efa: missing all traffic outbound to sg-0efa itself" in run.output
    assert "authorize-security-group-egress --region us-east-1 --group-id sg-0efa" in run.output
    assert "instance trainer-2 (i-0efa0002) is in no placement group, not in nccl" in run.output
    assert "trainer-1 (i-0efa0001)" not in run.output
    assert "modify-instance-placement --region us-east-1 --instance-id i-0efa0002 --group-name nccl" in run.output


def test_apply_creates_the_asked_placement_group_once_and_moves_nothing(credentials, tmp_path):
    instances = [efa_instance("i-0efa0003", "trainer-3", "efa", "")]
    extra = {"cloud_aws_mode": "apply", "cloud_aws_placement_group": "nccl-new",
             "cloud_aws_create_placement_group": True}
    with Ec2StandIn(instances, [efa_group([SELF_ALL], [WORLD_EGRESS, SELF_ALL])], []) as api:
        inventory = write_inventory(tmp_path / "hosts.yml", ["i-0efa0003"])
        first = run_role(inventory, api.url, credentials, extra=extra)
        second = run_role(inventory, api.url, credentials, extra=extra)
    assert first.rc == 0 and second.rc == 0, first.output + second.output
    assert first.changed() == 1 and second.changed() == 0, second.output
    assert api.calls.count("CreatePlacementGroup") == 1
    assert [group["Strategy"] for group in api.placement_groups] == ["cluster"]
    assert set(api.calls) == READS | {"CreatePlacementGroup"}, api.calls
    assert "instance trainer-3 (i-0efa0003) is in no placement group, not in nccl-new" in second.output


USER_EGRESS = {"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "IpRanges": [{"CidrIp": "203.0.113.0/24"}]}
WRITES = {"AuthorizeSecurityGroupIngress", "AuthorizeSecurityGroupEgress"}


def test_efa_apply_adds_both_self_rules_once_and_keeps_the_users(ec2, moto_server, credentials, tmp_path):
    """audit on the fresh group, apply, apply again with -vvv and a log: rules counted in moto."""
    cluster = make_cluster(ec2, "efa-apply", count=1)
    group = cluster["group"]
    # The user's own egress rule beside moto's default 0.0.0.0/0 one: both must survive.
    ec2.authorize_security_group_egress(GroupId=group, IpPermissions=[USER_EGRESS])
    instances = [efa_instance("i-0efa0011", "trainer-11", "efa", "nccl", group),
                 efa_instance("i-0efa0012", "trainer-12", "efa-only", "nccl", group)]
    placement = [{"GroupName": "nccl", "Strategy": "cluster", "State": "available"}]
    inventory = write_inventory(tmp_path / "hosts.yml", ["i-0efa0011", "i-0efa0012"])
    before = group_rules(ec2, group)
    assert self_rules(before, group) == {}
    log = tmp_path / "ansible.log"
    with Ec2StandIn(instances, [], placement, forward_to=moto_server["url"]) as api:
        audit = run_role(inventory, api.url, credentials)
        audit_calls, api.calls[:] = list(api.calls), []
        # -vvv and a log on the run that writes: the planted credentials must not appear.
        first = run_role(inventory, api.url, credentials, "-vvv", extra={"cloud_aws_mode": "apply"}, log=log)
        first_calls, api.calls[:] = list(api.calls), []
        second = run_role(inventory, api.url, credentials, extra={"cloud_aws_mode": "apply"})
        second_calls = list(api.calls)
    for run in (audit, first, second):
        assert run.rc == 0, run.output
    after = group_rules(ec2, group)

    # audit: nothing written, both missing rules named with their commands.
    assert audit.changed() == 0 and not WRITES & set(audit_calls), audit_calls
    assert f"security group {group}: missing all traffic inbound from {group} itself" in audit.output
    assert f"security group {group}: missing all traffic outbound to {group} itself" in audit.output
    assert f"authorize-security-group-egress --region us-east-1 --group-id {group}" in audit.output
    # apply: one write each way; the second apply writes nothing and reports changed=0.
    assert first.changed() == 1, first.output
    assert sorted(set(first_calls) & WRITES) == sorted(WRITES)
    assert [call for call in first_calls if call.startswith(("Revoke", "error"))] == []
    assert second.changed() == 0, second.output
    assert not WRITES & set(second_calls) and "nothing missing" in second.output
    assert self_rules(after, group) == {("in", "-1", None, None): 1, ("out", "-1", None, None): 1}
    # Exactly the two self rules were added; the user's 8443 in, 443 out and 0.0.0.0/0 out stay.
    old, new = rule_entries(before), rule_entries(after)
    assert sorted(set(new) - set(old), key=str) == [("in", "-1", None, None, group), ("out", "-1", None, None, group)]
    assert set(old) <= set(new) and len(new) == len(old) + 2
    texts = [audit.output, first.output, second.output, log.read_text(), moto_server["log"].read_text()]
    assert "AnsiballZ_ec2_security_group.py" in texts[1] and "AnsiballZ_ec2_security_group.py" in texts[3]
    for secret in credentials.values():
        assert all(secret not in text for text in texts)
    print(f"EFA apply via stand-in+moto: rules before {old}, after {new}; changed audit={audit.changed()} "
          f"apply1={first.changed()} apply2={second.changed()}; writes apply1={sorted(set(first_calls) & WRITES)} "
          f"apply2={sorted(set(second_calls) & WRITES)}")


def test_the_standin_checks_nested_members_against_the_model():
    """The requests ec2_security_group sends are walked down to their leaves: a misspelt member, a
    non-integer port or an unknown enum value is refused as EC2 would refuse it."""
    good = {"Action": "AuthorizeSecurityGroupEgress", "Version": MODEL.api_version, "GroupId": "sg-1",
            "IpPermissions.1.IpProtocol": "-1", "IpPermissions.1.Groups.1.GroupId": "sg-1",
            "IpPermissions.1.Groups.1.Description": "ncclkit"}
    assert validate_request(dict(good)).name == "AuthorizeSecurityGroupEgress"
    for bad, words in [({"IpPermissions.1.Groupz.1.GroupId": "sg-1"}, "UnknownParameter"),
                       ({"IpPermissions.1.FromPort": "all"}, "not an integer"),
                       ({"GroupId": None}, "MissingParameter")]:
        request = {key: value for key, value in {**good, **bad}.items() if value is not None}
        with pytest.raises(ModelError, match=words):
            validate_request(request)
    with pytest.raises(ModelError, match="Strategy='clustr'"):
        validate_request({"Action": "CreatePlacementGroup", "Version": MODEL.api_version, "Strategy": "clustr"})
