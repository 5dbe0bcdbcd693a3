"""site.yml with ncclkit_cloud: aws on a 2-node lab (index 102) against moto on loopback:
--check in audit and in apply shows what apply would do and changes nothing in moto."""

from __future__ import annotations

import pytest
from lab_indices import lab_index

from .aws_lab import aws_lab_cluster, moto_state, run_site, secrets_in, task_status

pytestmark = pytest.mark.lab
INDEX = lab_index(__file__)


@pytest.fixture(scope="module")
def aws_lab(tmp_path_factory, ec2):
    yield from aws_lab_cluster(INDEX, tmp_path_factory, ec2)


def test_site_check_in_audit_and_apply_changes_nothing(aws_lab, ec2, ec2_api, moto_server, credentials, tmp_path):
    """--check on the fresh lab: audit names every gap, apply shows what it would add; moto unchanged."""
    _lab, inventory, cluster = aws_lab
    group = cluster["group"]
    before = moto_state(ec2, group)
    first_call = len(ec2_api.calls)     # the stand-in's record is shared by the session's tests
    rc, audit, audit_seconds = run_site(inventory, ec2_api.url, credentials, "audit", "--check")
    assert rc == 0, audit[-6000:]
    assert moto_state(ec2, group) == before
    for text in ("TCP 32768-60999", "TCP 29500", "TCP 22"):
        assert f"security group {group}: missing {text} inbound from {group} itself" in audit, audit[-6000:]
    assert set(task_status(audit, "Add the missing security group rules")) == {"skipping"}
    # The inventory names no instance: these ids reached the controller from the nodes' IMDSv2.
    assert "Read the instance identity from IMDSv2] ***" in audit
    for instance in cluster["instances"]:
        assert f"instance {instance} is in no placement group" in audit

    log = tmp_path / "check.log"
    placement = {"cloud_aws_placement_group": "nccl-lab", "cloud_aws_create_placement_group": True}
    rc, apply, apply_seconds = run_site(inventory, ec2_api.url, credentials, "apply", "--check", "-vvv",
                                        extra=placement, log=log)
    assert rc == 0, apply[-6000:]
    assert moto_state(ec2, group) == before
    # What apply would do: the rules and the placement group it would add, shown as changed.
    assert set(task_status(apply, "Add the missing security group rules")) == {"changed"}, apply[-6000:]
    assert set(task_status(apply, "Create the cluster placement group")) == {"changed"}
    assert "aws ec2 create-placement-group --region us-east-1 --group-name nccl-lab --strategy cluster" in apply
    # Every request of both runs was a read: nothing written, created, stopped or moved.
    sent = set(ec2_api.calls[first_call:])
    assert sent and all(call.startswith("Describe") or call == "sts:GetCallerIdentity" for call in sent), sent
    assert ec2_api.placement_groups == []
    assert secrets_in(credentials, [audit, apply, log.read_text(), moto_server["log"].read_text()],
                      inventory / "reports") == []
    print(f"site.yml --check on lab {INDEX}: audit {audit_seconds:.0f} s, apply {apply_seconds:.0f} s; "
          f"moto rules {len(before[0])} before and after, instances unchanged {before[1]}; requests {sorted(sent)}")
