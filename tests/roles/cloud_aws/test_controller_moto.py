"""cloud_aws's controller side with the real amazon.aws modules against moto on loopback."""

from __future__ import annotations

from .conftest import group_rules, make_cluster, run_role, write_inventory


def self_rules(rules: dict, group: str) -> dict:
    """How often each self-referencing rule appears, per direction, as (proto, from, to)."""
    counts = {}
    for direction, perms in rules.items():
        for perm in perms:
            for pair in perm.get("UserIdGroupPairs", []):
                if pair["GroupId"] == group:
                    key = (direction, perm["IpProtocol"], perm.get("FromPort"), perm.get("ToPort"))
                    counts[key] = counts.get(key, 0) + 1
    return counts


def test_apply_twice_adds_each_rule_once_and_keeps_the_users(ec2, ec2_api, moto_server, credentials, tmp_path):
    """The second run also goes with -vvv and a log file: no planted credential may appear."""
    cluster = make_cluster(ec2, "apply-twice")
    inventory = write_inventory(tmp_path / "hosts.yml", cluster["instances"])
    before = group_rules(ec2, cluster["group"])
    assert self_rules(before, cluster["group"]) == {}

    first = run_role(inventory, ec2_api.url, credentials, extra={"cloud_aws_mode": "apply"})
    assert first.rc == 0, first.output
    assert first.changed() >= 1
    log = tmp_path / "ansible.log"
    second = run_role(inventory, ec2_api.url, credentials, "-vvv", extra={"cloud_aws_mode": "apply"}, log=log)
    assert second.rc == 0, second.output
    assert second.changed() == 0, second.output
    texts = [first.output, second.output, log.read_text(), moto_server["log"].read_text()]
    assert "ec2_security_group_info" in texts[1] and "ec2_security_group_info" in texts[2]
    for secret in credentials.values():
        assert all(secret not in text for text in texts)

    after = group_rules(ec2, cluster["group"])
    group = cluster["group"]
    # No EFA interface in moto: NCCL's TCP range, the rendezvous port and SSH, each once.
    assert self_rules(after, group) == {("in", "tcp", 32768, 60999): 1, ("in", "tcp", 29500, 29500): 1,
                                        ("in", "tcp", 22, 22): 1}
    user = [perm for perm in after["in"] if perm.get("FromPort") == 8443]
    assert user and user[0]["IpRanges"][0]["CidrIp"] == "198.51.100.7/32"
    assert after["out"] == before["out"]
    print(f"rules before: in={len(before['in'])} out={len(before['out'])}; after: in={len(after['in'])} "
          f"out={len(after['out'])}; changed run1={first.changed()} run2={second.changed()}; "
          f"seconds {first.seconds:.1f}+{second.seconds:.1f}")


def test_audit_changes_nothing_and_names_every_missing_rule(ec2, ec2_api, moto_server, credentials, tmp_path):
    cluster = make_cluster(ec2, "audit-fresh")
    inventory = write_inventory(tmp_path / "hosts.yml", cluster["instances"])
    before = group_rules(ec2, cluster["group"])
    run = run_role(inventory, ec2_api.url, credentials, extra={"cloud_aws_port_range": [40000, 40100]})
    assert run.rc == 0, run.output
    assert run.changed() == 0
    assert group_rules(ec2, cluster["group"]) == before
    group = cluster["group"]
    for text in ("TCP 40000-40100 inbound from", "TCP 29500 inbound from", "TCP 22 inbound from"):
        assert f"security group {group}: missing {text} {group} itself" in run.output, run.output
    assert f"FromPort=40000,ToPort=40100,UserIdGroupPairs=[{{GroupId={group}}}]" in run.output
    for instance in cluster["instances"]:
        assert f"instance {instance} is in no placement group" in run.output


def test_check_mode_shows_what_apply_would_add(ec2, ec2_api, moto_server, credentials, tmp_path):
    cluster = make_cluster(ec2, "check-mode")
    inventory = write_inventory(tmp_path / "hosts.yml", cluster["instances"])
    before = group_rules(ec2, cluster["group"])
    run = run_role(inventory, ec2_api.url, credentials, "--check", extra={"cloud_aws_mode": "apply"})
    assert run.rc == 0, run.output
    assert run.changed() == 1
    assert group_rules(ec2, cluster["group"]) == before


def test_unknown_instance_and_no_credentials_say_the_fix(ec2, ec2_api, moto_server, credentials, tmp_path):
    inventory = write_inventory(tmp_path / "hosts.yml", ["i-0123456789abcdef0"])
    run = run_role(inventory, ec2_api.url, credentials)
    assert run.rc != 0
    assert "not in region us-east-1" in run.output or "not found in region us-east-1" in run.output, run.output
    empty = {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": ""}
    run = run_role(inventory, ec2_api.url, empty)
    assert run.rc != 0
    assert "no AWS credentials on the controller" in run.output, run.output


def test_a_module_that_stops_with_an_exception_fails_the_play(ec2, moto_server, credentials, tmp_path):
    """moto alone has no placement-group API: ec2_placement_group_info raises on its 500 answer,
    and failed_when false keeps no msg of it; the play must stop, not read "no placement groups"."""
    cluster = make_cluster(ec2, "no-placement-api", count=1)
    run = run_role(write_inventory(tmp_path / "hosts.yml", cluster["instances"]), moto_server["url"], credentials)
    assert run.rc != 0
    assert "cloud_aws: the EC2 API failed in region us-east-1" in run.output, run.output[-3000:]
    assert "stopped with an unexpected error" in run.output
