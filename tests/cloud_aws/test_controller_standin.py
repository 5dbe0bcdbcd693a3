"""cloud_aws on EFA instances and placement groups, through the model-checked EC2 stand-in."""

from __future__ import annotations

from .conftest import run_role, write_inventory
from .ec2_standin import Ec2StandIn

WORLD_EGRESS = {"IpProtocol": "-1", "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}


def efa_instance(iid, name, kind, placement):
    group = [{"GroupId": "sg-0efa", "GroupName": "efa-cluster"}]
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
    with Ec2StandIn(instances, [efa_group()], [{"GroupName": "nccl", "Strategy": "cluster", "State": "available"}]) as api:
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
