"""What an EC2 cluster lacks for NCCL (clouds.aws.cluster_plan), from ec2_*_info's snake_case shapes."""

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.clouds.aws.cluster_plan import (
    AwsPlanError,
    cluster_plan,
    error_line,
    missing_rules,
    required_rules,
)

SETTINGS = {"region": "us-east-1", "port_range": [32768, 60999], "master_port": 29500}


def instance(iid, group="sg-1", kind="interface", placement="", name=""):
    return {"instance_id": iid, "tags": {"Name": name} if name else {},
            "placement": {"group_name": placement},
            "security_groups": [{"group_id": group, "group_name": "g"}],
            "network_interfaces": [{"interface_type": kind, "groups": [{"group_id": group}]}]}


def group(gid="sg-1", ingress=(), egress=()):
    return {"group_id": gid, "group_name": "cluster", "description": "d", "vpc_id": "vpc-1",
            "ip_permissions": list(ingress), "ip_permissions_egress": list(egress)}


def self_all(gid="sg-1"):
    return {"ip_protocol": "-1", "user_id_group_pairs": [{"group_id": gid}]}


WORLD_EGRESS = {"ip_protocol": "-1", "ip_ranges": [{"cidr_ip": "0.0.0.0/0"}], "user_id_group_pairs": []}


def test_efa_needs_self_in_and_out_even_beside_world_egress():
    plan = cluster_plan([instance("i-1", kind="efa"), instance("i-2", kind="efa-only")],
                        [group(egress=[WORLD_EGRESS])], ["i-1", "i-2"], SETTINGS)
    assert plan["efa_instances"] == ["i-1", "i-2"]
    assert plan["missing_rules"] == ["security group sg-1: missing all traffic inbound from sg-1 itself",
                                     "security group sg-1: missing all traffic outbound to sg-1 itself"]
    only = plan["groups"][0]
    assert only["rules"] == [{"proto": "all", "group_id": "sg-1", "rule_desc": only["rules"][0]["rule_desc"]}]
    assert only["rules_egress"][0]["proto"] == "all"
    assert "authorize-security-group-egress" in plan["commands"][1]


def test_efa_with_both_self_rules_lacks_nothing():
    plan = cluster_plan([instance("i-1", kind="efa", placement="pg")],
                        [group(ingress=[self_all()], egress=[self_all()])], ["i-1"],
                        {**SETTINGS, "placement_groups": [{"name": "pg", "strategy": "cluster"}]})
    assert plan["problems"] == [] and plan["groups"][0]["missing"] == 0


def test_tcp_rules_are_covered_by_a_wider_self_rule_only():
    wide = {"ip_protocol": "tcp", "from_port": 0, "to_port": 65535, "user_id_group_pairs": [{"group_id": "sg-1"}]}
    other = {"ip_protocol": "tcp", "from_port": 0, "to_port": 65535, "user_id_group_pairs": [{"group_id": "sg-9"}]}
    rules = required_rules("sg-1", False, [32768, 60999], 29500)
    assert missing_rules(group(ingress=[wide]), rules) == []
    assert missing_rules(group(ingress=[other]), rules) == rules
    assert [(r["from_port"], r["to_port"]) for r in rules] == [(32768, 60999), (29500, 29500), (22, 22)]


def test_placement_names_instances_outside_and_the_commands():
    insts = [instance("i-1", placement="pg"), instance("i-2", name="worker-2"), instance("i-3", placement="other")]
    plan = cluster_plan(insts, [group()], ["i-1", "i-2", "i-3"],
                        {**SETTINGS, "placement_groups": [{"name": "pg", "strategy": "cluster"},
                                                          {"name": "other", "strategy": "spread"}]})
    found = plan["placement"]["findings"]
    assert found[:2] == ["instance worker-2 (i-2) is in no placement group, not in pg",
                         "instance i-3 is in other, not in pg"]
    # The stop/start that a move takes: capacity may be gone, instance-store data is.
    assert found[2].startswith("moving i-2, i-3 stops and starts each") and "InsufficientInstanceCapacity" in found[2]
    assert "instance-store" in found[2]
    assert "modify-instance-placement --region us-east-1 --instance-id i-2 --group-name pg" in plan["commands"][-2]
    assert plan["placement"]["create"] is False


def test_a_wanted_group_that_does_not_exist_is_created_on_request_only():
    plan = cluster_plan([instance("i-1")], [group()], ["i-1"], {**SETTINGS, "placement_group": "nccl"})
    assert plan["placement"]["create"] is True
    commands = " ".join(plan["commands"])
    assert "create-placement-group --region us-east-1 --group-name nccl --strategy cluster" in commands
    spread = cluster_plan([instance("i-1", placement="s")], [group()], ["i-1"],
                          {**SETTINGS, "placement_groups": [{"name": "s", "strategy": "spread"}]})
    assert "has strategy spread, not cluster" in spread["problems"][-1]


def test_bad_inputs_say_the_fix():
    with pytest.raises(AwsPlanError, match="i-9 not found in region us-east-1"):
        cluster_plan([instance("i-1")], [group()], ["i-1", "i-9"], SETTINGS)
    with pytest.raises(AwsPlanError, match="reversed"):
        cluster_plan([instance("i-1")], [group()], ["i-1"], {**SETTINGS, "port_range": [60999, 32768]})
    with pytest.raises(AwsPlanError, match="not a port"):
        cluster_plan([instance("i-1")], [group()], ["i-1"], {**SETTINGS, "master_port": "x; rm -rf /"})


@pytest.mark.parametrize("message, words", [
    ("Unable to locate credentials", "no AWS credentials on the controller"),
    ("An error occurred (AuthFailure) when calling the DescribeInstances operation", "rejected the credentials"),
    ("An error occurred (UnauthorizedOperation)", "allow ec2:DescribeInstances, ec2:DescribeSecurityGroups"),
    ("An error occurred (InvalidInstanceID.NotFound)", "not in region eu-west-9"),
    ("Could not connect to the endpoint URL: https://ec2.eu-west-9.amazonaws.com/", "set cloud_aws_region"),
])
def test_error_lines_name_the_fix(message, words):
    line = error_line(message, "eu-west-9", ("ec2:DescribeInstances", "ec2:DescribeSecurityGroups"))
    assert words in line and "\n" not in line


def test_instances_in_different_groups_are_admitted_by_each_other():
    # A group's self rule admits only its own members: i-1 (sg-1) and i-2 (sg-2) must admit each other.
    plan = cluster_plan([instance("i-1", group="sg-1"), instance("i-2", group="sg-2")],
                        [group("sg-1"), group("sg-2")], ["i-1", "i-2"], SETTINGS)
    missing = plan["missing_rules"]
    assert "security group sg-1: missing TCP 32768-60999 inbound from sg-1 itself" in missing
    assert ("security group sg-1: missing TCP 32768-60999 inbound from sg-2 (a group of other cluster "
            "instances)") in missing
    assert ("security group sg-2: missing TCP 29500 inbound from sg-1 (a group of other cluster "
            "instances)") in missing
    sources = {rule["group_id"] for entry in plan["groups"] if entry["group_id"] == "sg-2" for rule in entry["rules"]}
    assert sources == {"sg-1", "sg-2"}


# -- CIDR rules that already admit the cluster (non-EFA only) -----------------------------------
def addressed(iid, address, kind="interface", group_id="sg-1"):
    """An instance with its private address where ec2_instance_info puts it (primary and per ENI)."""
    found = instance(iid, group=group_id, kind=kind)
    found["private_ip_address"] = address
    found["network_interfaces"][0]["private_ip_addresses"] = [{"private_ip_address": address, "primary": True}]
    return found


def cidr(block, proto="tcp", low=None, high=None):
    perm = {"ip_protocol": proto, "ip_ranges": [{"cidr_ip": block}], "user_id_group_pairs": []}
    if proto != "-1":
        perm.update(from_port=low, to_port=high)
    return perm


PAIR = [addressed("i-1", "10.0.1.21"), addressed("i-2", "10.0.1.22")]


def test_a_vpc_cidr_for_all_traffic_admits_the_cluster():
    plan = cluster_plan(PAIR, [group(ingress=[cidr("10.0.0.0/16", "-1")])], ["i-1", "i-2"], SETTINGS)
    assert plan["missing_rules"] == [] and plan["groups"][0]["missing"] == 0


def test_a_cidr_covers_only_the_ports_it_names():
    # TCP 0-65535 from the VPC covers every port; 22 alone leaves NCCL's range and the rendezvous port.
    wide = cluster_plan(PAIR, [group(ingress=[cidr("10.0.0.0/16", "tcp", 0, 65535)])], ["i-1", "i-2"], SETTINGS)
    assert wide["missing_rules"] == []
    ssh = cluster_plan(PAIR, [group(ingress=[cidr("10.0.0.0/16", "tcp", 22, 22)])], ["i-1", "i-2"], SETTINGS)
    assert ssh["missing_rules"] == ["security group sg-1: missing TCP 32768-60999 inbound from sg-1 itself",
                                    "security group sg-1: missing TCP 29500 inbound from sg-1 itself"]
    udp = cluster_plan(PAIR, [group(ingress=[cidr("10.0.0.0/16", "udp", 0, 65535)])], ["i-1", "i-2"], SETTINGS)
    assert len(udp["missing_rules"]) == 3


def test_a_cidr_must_hold_every_instance_address():
    narrow = cidr("10.0.1.16/30", "-1")          # .16-.19: neither instance
    one = cidr("10.0.1.21/32", "-1")             # i-1 only
    plan = cluster_plan(PAIR, [group(ingress=[narrow, one])], ["i-1", "i-2"], SETTINGS)
    assert len(plan["missing_rules"]) == 3
    both = cluster_plan(PAIR, [group(ingress=[one, cidr("10.0.1.22/32", "-1")])], ["i-1", "i-2"], SETTINGS)
    assert both["missing_rules"] == []
    # An instance whose address is unknown cannot be proven inside any CIDR.
    unknown = [PAIR[0], instance("i-3")]
    plan = cluster_plan(unknown, [group(ingress=[cidr("0.0.0.0/0", "-1")])], ["i-1", "i-3"], SETTINGS)
    assert len(plan["missing_rules"]) == 3


def test_efa_still_needs_the_self_rules_beside_a_vpc_cidr():
    efa = [addressed("i-1", "10.0.1.21", kind="efa"), addressed("i-2", "10.0.1.22", kind="efa")]
    plan = cluster_plan(efa, [group(ingress=[cidr("10.0.0.0/16", "-1")], egress=[cidr("10.0.0.0/16", "-1")])],
                        ["i-1", "i-2"], SETTINGS)
    assert plan["missing_rules"] == ["security group sg-1: missing all traffic inbound from sg-1 itself",
                                     "security group sg-1: missing all traffic outbound to sg-1 itself"]


def test_a_cidr_admits_the_other_groups_members_too():
    two = [addressed("i-1", "10.0.1.21", group_id="sg-1"), addressed("i-2", "10.0.2.22", group_id="sg-2")]
    plan = cluster_plan(two, [group("sg-1", ingress=[cidr("10.0.2.0/24", "-1")]), group("sg-2")],
                        ["i-1", "i-2"], SETTINGS)
    # sg-1 admits sg-2's member (10.0.2.22) by CIDR, but not its own (10.0.1.21).
    assert [line for line in plan["missing_rules"] if line.startswith("security group sg-1")] == [
        "security group sg-1: missing TCP 32768-60999 inbound from sg-1 itself",
        "security group sg-1: missing TCP 29500 inbound from sg-1 itself",
        "security group sg-1: missing TCP 22 inbound from sg-1 itself"]


# -- capacity that AWS already placed ------------------------------------------------------------
@pytest.mark.parametrize("extra, words", [({"instance_lifecycle": "capacity-block"}, "a Capacity Block"),
                                          ({"capacity_reservation_id": "cr-0abc"}, "capacity reservation cr-0abc")])
def test_reserved_capacity_is_never_offered_a_stop_move_start(extra, words):
    insts = [instance("i-1", placement="pg"), {**instance("i-2"), **extra}]
    plan = cluster_plan(insts, [group()], ["i-1", "i-2"],
                        {**SETTINGS, "placement_groups": [{"name": "pg", "strategy": "cluster"}]})
    assert not any("i-2" in command for command in plan["commands"]), plan["commands"]
    assert [line for line in plan["placement"]["findings"] if "i-2" in line] == [
        f"instance i-2 is in no placement group, not in pg, but runs in {words}: its capacity is placed by AWS "
        "(together, for a Capacity Block or a reservation in a cluster placement group), so no move is offered"]


# -- every group on an interface counts -----------------------------------------------------------
def two_groups(iid, address, groups=("sg-1", "sg-2")):
    found = addressed(iid, address)
    found["security_groups"] = [{"group_id": gid, "group_name": gid} for gid in groups]
    found["network_interfaces"][0]["groups"] = [{"group_id": gid} for gid in groups]
    return found


def test_a_rule_in_any_group_of_the_interface_admits_the_cluster():
    # sg-1 (the first) has nothing; sg-2, also on every instance, admits itself: nothing is missing.
    insts = [two_groups("i-1", "10.0.1.21"), two_groups("i-2", "10.0.1.22")]
    wide = {"ip_protocol": "-1", "user_id_group_pairs": [{"group_id": "sg-2"}]}
    plan = cluster_plan(insts, [group("sg-1"), group("sg-2", ingress=[wide])], ["i-1", "i-2"], SETTINGS)
    assert plan["missing_rules"] == []
    # A rule from sg-2 in sg-1 admits the peers too: their interfaces are in sg-2.
    plan = cluster_plan(insts, [group("sg-1", ingress=[wide]), group("sg-2")], ["i-1", "i-2"], SETTINGS)
    assert plan["missing_rules"] == []


def test_the_primary_ena_interface_is_audited_beside_separate_efa_interfaces():
    def p5(iid):
        found = instance(iid, group="sg-ena")
        found["network_interfaces"] = [
            {"interface_type": "interface", "attachment": {"device_index": 0}, "groups": [{"group_id": "sg-ena"}]},
            {"interface_type": "efa-only", "attachment": {"device_index": 1}, "groups": [{"group_id": "sg-efa"}]}]
        return found
    efa_ok = group("sg-efa", ingress=[self_all("sg-efa")], egress=[self_all("sg-efa")])
    plan = cluster_plan([p5("i-1"), p5("i-2")], [group("sg-ena"), efa_ok], ["i-1", "i-2"], SETTINGS)
    # EFA's self rules are there; bootstrap, rendezvous and SSH reach the ENA interface, whose group lacks them.
    assert plan["missing_rules"] == [
        "security group sg-ena: missing TCP 32768-60999 inbound from sg-ena itself",
        "security group sg-ena: missing TCP 29500 inbound from sg-ena itself",
        "security group sg-ena: missing TCP 22 inbound from sg-ena itself"]
    assert plan["efa_instances"] == ["i-1", "i-2"]
