"""nccl_alibaba_ecs through Ansible against the loopback ECS stand-in (tests/roles/cloud_alibaba/ecs_standin.py):
signatures checked, parameters checked against the SDK's models, writes recorded."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT

sys.path.insert(0, str(Path(__file__).parent))
from ecs_standin import EcsStandin  # noqa: E402

KEY = "LTAI" + secrets.token_hex(8)
SECRET = secrets.token_hex(16)
USER_RULE = {"IpProtocol": "TCP", "PortRange": "22/22", "SourceCidrIp": "203.0.113.0/24", "Description": "ops ssh"}


def standin(inner="Drop", jumbo=(True, True), kind="normal", extra_rules=()):
    instances = {f"i-bp1node{i}": {"EnableJumboFrame": flag, "SecurityGroupIds": ["sg-bp1cluster"]}
                 for i, flag in enumerate(jumbo, 1)}
    return EcsStandin({KEY: SECRET}, instances, {"sg-bp1cluster": {
        "InnerAccessPolicy": inner, "SecurityGroupType": kind, "Permissions": [dict(USER_RULE), *extra_rules]}})


def run(server, mode="audit", key=KEY, secret=SECRET, verbose=False, instances=("i-bp1node1", "i-bp1node2"),
        erdma=False):
    args = {"region": "cn-hangzhou", "instance_ids": list(instances), "cluster_cidr": "172.16.0.0/24",
            "port_range": [32768, 60999], "rendezvous_ports": [29500], "mode": mode,
            "endpoint": server.endpoint, "protocol": "HTTP", "erdma": erdma}
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"),
           "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_CALLBACK_RESULT_FORMAT": "json",
           # Only what a test gives: the SDK must never look for credentials elsewhere.
           "ALIBABA_CLOUD_ECS_METADATA_DISABLED": "true"}
    if key:
        env["ALIBABA_CLOUD_ACCESS_KEY_ID"] = key
    if secret:
        env["ALIBABA_CLOUD_ACCESS_KEY_SECRET"] = secret
    argv = [str(Path(sys.executable).with_name("ansible")), "localhost", "-i", "localhost,", "-c", "local",
            "-e", f"ansible_python_interpreter={sys.executable}", "-m", "ncclkit.cluster.nccl_alibaba_ecs",
            "-a", json.dumps(args)] + (["-vvv"] if verbose else [])
    done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=120, check=False)
    output = done.stdout + done.stderr
    body = output[output.index("=> {") + 3:] if "=> {" in output else "{}"
    result = json.JSONDecoder().raw_decode(body)[0]
    return done.returncode, result, output


def test_audit_names_every_missing_rule_and_writes_nothing():
    with standin() as server:
        rc, result, dummy = run(server)
        assert rc == 0 and result["changed"] is False and server.writes() == []
        assert server.rejected == []   # every request was signed right and used defined parameters
    assert result["jumbo_frames"] is True
    assert [rule["PortRange"] for rule in result["groups"][0]["missing"]] == ["32768/60999", "29500/29500"]
    assert any("aliyun ecs AuthorizeSecurityGroup --RegionId cn-hangzhou --SecurityGroupId sg-bp1cluster "
               "--IpProtocol TCP --PortRange 32768/60999 --SourceCidrIp 172.16.0.0/24" in line
               for line in result["findings"])


def test_apply_adds_the_rules_once_and_keeps_the_users_own():
    with standin() as server:
        rc, first, output = run(server, "apply", verbose=True)
        assert rc == 0 and first["changed"] is True
        assert server.writes() == ["AuthorizeSecurityGroup", "AuthorizeSecurityGroup"]
        rc, second, dummy = run(server, "apply")
        assert rc == 0 and second["changed"] is False and second["added"] == []
        assert server.writes() == ["AuthorizeSecurityGroup", "AuthorizeSecurityGroup"]   # the second run wrote nothing
        rules = server.groups["sg-bp1cluster"]["Permissions"]
    assert USER_RULE in rules and len(rules) == 3
    assert KEY not in output and SECRET not in output      # -vvv shows neither


def test_an_enterprise_group_gets_egress_rules_once():
    with standin(kind="enterprise", inner="Accept") as server:
        rc, first, dummy = run(server, "apply")
        assert rc == 0 and first["changed"] is True, first
        assert server.writes() == ["AuthorizeSecurityGroup", "AuthorizeSecurityGroup",
                                   "AuthorizeSecurityGroupEgress", "AuthorizeSecurityGroupEgress"]
        assert server.rejected == []
        rc, second, dummy = run(server, "apply")
        assert rc == 0 and second["changed"] is False and len(server.writes()) == 4
        egress = [rule for rule in server.groups["sg-bp1cluster"]["Permissions"] if rule.get("Direction") == "egress"]
    assert [(rule["PortRange"], rule["DestCidrIp"], rule["Priority"]) for rule in egress] == [
        ("32768/60999", "172.16.0.0/24", "1"), ("29500/29500", "172.16.0.0/24", "1")]


def test_apply_fails_without_a_write_while_a_priority_one_drop_closes_the_path():
    drop = {"IpProtocol": "ALL", "PortRange": "-1/-1", "SourceCidrIp": "0.0.0.0/0", "Policy": "Drop",
            "Priority": "1", "Description": "ops: deny all"}
    with standin(extra_rules=[drop]) as server:
        rc, audit, dummy = run(server)
        assert rc == 0 and audit["blocked"] and server.writes() == []
        rc, applied, dummy = run(server, "apply")
        assert rc != 0 and server.writes() == []
    assert "apply cannot open the cluster's traffic" in applied["msg"] and "Nothing was changed" in applied["msg"]
    assert "Drop ALL -1/-1 from 0.0.0.0/0 priority 1 in sg-bp1cluster" in applied["msg"]


def test_eri_and_deployment_sets_are_audited():
    with standin() as server:
        server.instances["i-bp1node2"]["TrafficModes"] = ["Standard", "HighPerformance"]
        server.deployment_sets = [{"DeploymentSetId": "ds-bp1spread", "Strategy": "Availability",
                                   "InstanceIds": ["i-bp1node1", "i-bp1node2"]}]
        rc, result, dummy = run(server, erdma=True)
        assert rc == 0 and server.rejected == [] and server.writes() == []
    found = result["findings"]
    assert any(line.startswith("i-bp1node1: no network interface has ERI on") for line in found), found
    assert not any(line.startswith("i-bp1node2: no network interface") for line in found)
    assert sum("ds-bp1spread with strategy Availability, which spreads instances apart" in line for line in found) == 2


def test_intra_group_accept_needs_nothing():
    with standin(inner="Accept") as server:
        rc, result, dummy = run(server, "apply")
        assert rc == 0 and result["changed"] is False and server.writes() == []
    assert "intra-group access is Accept" in result["groups"][0]["message"]


def test_jumbo_frames_that_differ_are_named():
    with standin(jumbo=(True, False)) as server:
        rc, result, dummy = run(server)
    assert rc == 0 and result["jumbo_frames"] is None
    assert any("jumbo frames differ" in line for line in result["findings"])


@pytest.mark.parametrize("key,secret,instances,message", [
    ("", "", ("i-bp1node1",), "no Alibaba Cloud credentials: export ALIBABA_CLOUD_ACCESS_KEY_ID and "
                              "ALIBABA_CLOUD_ACCESS_KEY_SECRET"),
    (KEY, "wrong" + SECRET, ("i-bp1node1",), "SignatureDoesNotMatch"),
    (KEY, SECRET, ("i-bp1gone",), "InvalidInstanceId.NotFound"),
])
def test_bad_input_is_one_line_and_no_write(key, secret, instances, message):
    with standin() as server:
        rc, result, output = run(server, "apply", key=key, secret=secret, instances=instances)
        assert rc != 0 and server.writes() == []
    assert message in result["msg"] and "\n" not in result["msg"]
    assert SECRET not in output
