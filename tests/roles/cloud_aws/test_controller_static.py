"""The controller tasks: every amazon.aws call takes its region and endpoint from one module_defaults,
and the security groups to read come from a filter, not from Jinja."""

from __future__ import annotations

import pathlib

import yaml

TASKS = pathlib.Path(__file__).parents[3] / "roles" / "cloud_aws" / "tasks" / "controller.yml"


def aws_tasks(tasks):
    for task in tasks:
        yield from aws_tasks(task.get("block") or [])
        for name, args in task.items():
            if name.startswith("amazon.aws."):
                yield name, args


def test_amazon_aws_calls_share_one_module_defaults():
    tasks = yaml.safe_load(TASKS.read_text())
    blocks = [task for task in tasks if any(name.startswith("amazon.aws.") for name, dummy in aws_tasks([task]))]
    assert len(blocks) == 1 and "block" in blocks[0]
    defaults = blocks[0]["module_defaults"]["group/amazon.aws.aws"]
    assert set(defaults) == {"region", "endpoint_url"}
    calls = list(aws_tasks(tasks))
    assert len(calls) == 5
    for name, args in calls:
        assert not {"region", "endpoint_url", "aws_access_key", "aws_secret_key"} & set(args or {}), name


def test_the_groups_to_read_come_from_the_filter():
    read = dict(aws_tasks(yaml.safe_load(TASKS.read_text())))["amazon.aws.ec2_security_group_info"]
    assert read["filters"]["group-id"].replace(" ", "") == (
        "{{__cloud_aws_instances.instances|ncclkit.cluster.cloud_aws_group_ids}}")
