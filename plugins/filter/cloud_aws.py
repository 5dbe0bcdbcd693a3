"""Filters of the cloud_aws role; the logic lives in plugins/module_utils/clouds/aws/cluster_plan.py."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
# The module_utils are imported inside the filters, not here: Ansible imports every filter file of
# the collection in each worker that calls any of them (about 0.09 s CPU a worker, docs/benchmarks.md).


def cloud_aws_plan(instances, security_groups, wanted_ids, settings):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.clouds.aws.cluster_plan import (
        AwsPlanError,
        cluster_plan,
    )
    try:
        return cluster_plan(list(instances), list(security_groups), list(wanted_ids), dict(settings))
    except AwsPlanError as error:
        raise AnsibleFilterError(str(error)) from error


def cloud_aws_group_ids(instances):
    """The ids of every security group attached to the instances (ec2_instance_info's list)."""
    from ansible_collections.ncclkit.cluster.plugins.module_utils.clouds.aws.cluster_plan import attached_group_ids
    return attached_group_ids(list(instances or []))


def cloud_aws_error_line(result, region, step="read", expected=""):
    """The one line for a failed EC2 step; '' when it did not fail.

    The tasks register with failed_when false (their output is no_log), which clears `failed`:
    a result fails when it carries a msg but neither the key it should return nor a change, or
    when the module stopped with an exception (ansible-core then keeps only
    failed_when_suppressed_exception, without a msg: an endpoint that answers something other
    than EC2's XML, for example)."""
    from ansible_collections.ncclkit.cluster.plugins.module_utils.clouds.aws.cluster_plan import (
        APPLY_ACTIONS,
        READ_ACTIONS,
        error_line,
    )
    if result.get("skipped"):
        return ""
    actions = READ_ACTIONS if step == "read" else APPLY_ACTIONS
    if result.get("failed_when_suppressed_exception") or result.get("exception"):
        return error_line(result.get("msg") or "the amazon.aws module stopped with an unexpected error (is "
                          "cloud_aws_endpoint_url an EC2 endpoint? run the failed step without no_log to see it)",
                          region, actions)
    # A change with a msg is check mode's answer ("... would be created if not in check mode").
    if not result.get("msg") or (expected and expected in result) or result.get("changed"):
        return ""
    return error_line(result.get("msg", ""), region, actions)


class FilterModule:
    def filters(self):
        return {"cloud_aws_plan": cloud_aws_plan, "cloud_aws_error_line": cloud_aws_error_line,
                "cloud_aws_group_ids": cloud_aws_group_ids}
