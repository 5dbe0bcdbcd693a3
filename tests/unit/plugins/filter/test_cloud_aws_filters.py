"""The cloud_aws filters: errors become Ansible's, a failed EC2 read is told by its missing key."""

import pytest

INSTANCE = {"instance_id": "i-1", "security_groups": [{"group_id": "sg-1"}], "network_interfaces": []}
GROUP = {"group_id": "sg-1", "ip_permissions": [], "ip_permissions_egress": []}
SETTINGS = {"region": "us-east-1", "port_range": [32768, 60999], "master_port": 29500}


@pytest.fixture(scope="module")
def filters():
    """Imported here, not at collection, for the reason tests/unit/plugins/filter/test_nccl_profile_filters.py gives."""
    from ansible.module_utils import _internal

    was_controller = _internal.is_controller
    from ansible.errors import AnsibleFilterError

    from ansible_collections.ncclkit.cluster.plugins.filter.cloud_aws import FilterModule

    yield FilterModule().filters(), AnsibleFilterError
    _internal.is_controller = was_controller


def test_plan_filter(filters):
    found, filter_error = filters
    assert len(found["cloud_aws_plan"]([INSTANCE], [GROUP], ["i-1"], SETTINGS)["missing_rules"]) == 3
    with pytest.raises(filter_error, match="i-2 not found"):
        found["cloud_aws_plan"]([INSTANCE], [GROUP], ["i-2"], SETTINGS)


def test_error_line_filter(filters):
    line = filters[0]["cloud_aws_error_line"]
    assert line({"instances": [], "changed": False}, "us-east-1", "read", "instances") == ""
    assert line({"skipped": True}, "us-east-1", "apply") == ""
    failed = {"failed": False, "msg": "Failed: An error occurred (UnauthorizedOperation) when calling"}
    assert "ec2:DescribeInstances" in line(failed, "us-east-1", "read", "instances")
    assert "ec2:AuthorizeSecurityGroupEgress" in line(failed, "us-east-1", "apply")


def test_a_suppressed_module_exception_is_a_failure(filters):
    """ansible-core 2.19 keeps no msg when failed_when hides a module's exception: still one line."""
    line = filters[0]["cloud_aws_error_line"]
    crashed = {"failed": False, "changed": False, "failed_when_result": False,
               "failed_when_suppressed_exception": "(traceback unavailable)"}
    assert "stopped with an unexpected error" in line(crashed, "us-east-1", "read", "placement_groups")
    assert "ec2:CreatePlacementGroup" in line(crashed, "us-east-1", "apply")


def test_check_modes_would_be_message_is_no_failure(filters):
    """ec2_placement_group under --check answers changed with a msg and no placement_group."""
    line = filters[0]["cloud_aws_error_line"]
    would = {"changed": True, "failed": False, "msg": "EC2 placement group would be created if not in check mode"}
    assert line(would, "us-east-1", "apply") == ""


def test_group_ids_filter_reads_every_attached_group_once(filters):
    found, dummy = filters
    instances = [
        {"instance_id": "i-1", "security_groups": [{"group_id": "sg-ena"}, {"group_id": "sg-ssh"}],
         "network_interfaces": [{"groups": [{"group_id": "sg-ena"}, {"group_id": "sg-ssh"}]},
                                {"interface_type": "efa-only", "groups": [{"group_id": "sg-efa"}]}]},
        {"instance_id": "i-2", "security_groups": [{"group_id": "sg-ena"}], "network_interfaces": None},
    ]
    assert found["cloud_aws_group_ids"](instances) == ["sg-ena", "sg-ssh", "sg-efa"]
    assert found["cloud_aws_group_ids"]([]) == []
