"""A real EC2 API on loopback (moto in server mode, one per session) and a runner for the role.

Every process gets explicit random test credentials and AWS_EC2_METADATA_DISABLED=true, so
nothing falls back to the instance metadata address; the only endpoint is 127.0.0.1.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from lab_playbook import play

REPO_ROOT = Path(__file__).resolve().parents[3]
PLAYBOOK = Path(__file__).with_name("controller.yml")
REGION = "us-east-1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_credentials() -> dict:
    """Unique random key, secret and token: the leak tests grep every output for them."""
    return {
        "AWS_ACCESS_KEY_ID": "AKIA" + secrets.token_hex(8).upper(),
        "AWS_SECRET_ACCESS_KEY": secrets.token_urlsafe(30),
        "AWS_SESSION_TOKEN": "TOKEN" + secrets.token_urlsafe(40),
    }


def aws_env(credentials: dict) -> dict:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("AWS_") and key not in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")}
    env.update(credentials, AWS_EC2_METADATA_DISABLED="true", AWS_DEFAULT_REGION=REGION,
               AWS_CONFIG_FILE="/dev/null", AWS_SHARED_CREDENTIALS_FILE="/dev/null",
               NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    return env


def playbook_env(credentials: dict, log: Path | None = None) -> dict:
    """lab_playbook.play's `env` for a run with these credentials only: aws_env leaves out this
    process's AWS_* and proxy variables, and a None value takes them out of the run's environment."""
    return {**dict.fromkeys(os.environ), **aws_env(credentials), "ANSIBLE_CALLBACK_RESULT_FORMAT": "json",
            "PYTHONPATH": f"{REPO_ROOT / 'src'}:{REPO_ROOT / 'collections'}",
            **({"ANSIBLE_LOG_PATH": str(log)} if log else {})}


@pytest.fixture(scope="session")
def credentials():
    return test_credentials()


@pytest.fixture(scope="session")
def moto_server(credentials, tmp_path_factory):
    """moto_server on a free loopback port; its log is one of the files the leak test greps."""
    port = free_port()
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                stdout=out, stderr=subprocess.STDOUT, env=aws_env(credentials))
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(f"moto server exited: {log.read_text()}") from None
            time.sleep(0.2)
    else:
        proc.kill()
        raise RuntimeError("moto server did not listen in 30 s")
    yield {"url": url, "log": log}
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="session")
def ec2_api(moto_server):
    """The endpoint the role is given: moto behind the model-checked stand-in, which answers the
    placement-group calls moto does not implement and forwards everything else to moto."""
    from .ec2_standin import Ec2StandIn

    with Ec2StandIn(None, [], [], forward_to=moto_server["url"]) as api:
        yield api


@pytest.fixture(scope="session")
def ec2(moto_server, credentials):
    import boto3

    return boto3.client("ec2", region_name=REGION, endpoint_url=moto_server["url"],
                        aws_access_key_id=credentials["AWS_ACCESS_KEY_ID"],
                        aws_secret_access_key=credentials["AWS_SECRET_ACCESS_KEY"],
                        aws_session_token=credentials["AWS_SESSION_TOKEN"])


def make_cluster(ec2, name: str, count: int = 2) -> dict:
    """A VPC, a subnet, a security group with a user rule of its own, and instances in it."""
    vpc = ec2.create_vpc(CidrBlock="10.20.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.20.1.0/24")["Subnet"]["SubnetId"]
    group = ec2.create_security_group(GroupName=name, Description="ncclkit test cluster", VpcId=vpc)["GroupId"]
    ec2.authorize_security_group_ingress(GroupId=group, IpPermissions=[{
        "IpProtocol": "tcp", "FromPort": 8443, "ToPort": 8443, "IpRanges": [{"CidrIp": "198.51.100.7/32"}]}])
    image = ec2.describe_images()["Images"][0]["ImageId"]
    reservation = ec2.run_instances(ImageId=image, MinCount=count, MaxCount=count, InstanceType="p5.48xlarge",
                                    SubnetId=subnet, SecurityGroupIds=[group])
    return {"vpc": vpc, "subnet": subnet, "group": group,
            "instances": [inst["InstanceId"] for inst in reservation["Instances"]]}


def group_rules(ec2, group: str) -> dict:
    found = ec2.describe_security_groups(GroupIds=[group])["SecurityGroups"][0]
    return {"in": found["IpPermissions"], "out": found["IpPermissionsEgress"]}


def rule_entries(rules: dict) -> list:
    """One (direction, protocol, from, to, source) per rule: EC2 folds the rules of one protocol
    and port range into one permission, so permissions are not rules."""
    found = []
    for direction, perms in rules.items():
        for perm in perms:
            key = (direction, perm["IpProtocol"], perm.get("FromPort"), perm.get("ToPort"))
            found += [(*key, entry["CidrIp"]) for entry in perm.get("IpRanges", [])]
            found += [(*key, entry["CidrIpv6"]) for entry in perm.get("Ipv6Ranges", [])]
            found += [(*key, entry["GroupId"]) for entry in perm.get("UserIdGroupPairs", [])]
            found += [(*key, entry["PrefixListId"]) for entry in perm.get("PrefixListIds", [])]
    return sorted(found, key=str)


@dataclass
class Run:
    rc: int
    output: str
    seconds: float
    recap: dict = field(default_factory=dict)

    def changed(self) -> int:
        return sum(counts["changed"] for counts in self.recap.values())


def write_inventory(path: Path, instances: list[str]) -> Path:
    lines = ["cluster:", "  hosts:"]
    for number, instance in enumerate(instances, 1):
        lines += [f"    node{number}:", "      ansible_connection: local",
                  f"      ansible_python_interpreter: {sys.executable}", f"      aws_instance_id: {instance}"]
    path.write_text("\n".join(lines) + "\n")
    return path


def run_role(inventory: Path, moto_url: str, credentials: dict, *args: str, extra: dict | None = None,
             log: Path | None = None) -> Run:
    variables = {"cloud_aws_endpoint_url": moto_url, "cloud_aws_region": REGION, **(extra or {})}
    done = play(inventory, str(PLAYBOOK), variables, env=playbook_env(credentials, log), args=args, timeout=300)
    return Run(done.rc, done.stdout, done.seconds, done.recap)
