"""site.yml with ncclkit_cloud: aws on a 2-node lab (index 100) against moto on loopback.

Each node reads its instance id from an IMDSv2 stand-in on 169.254.169.254:80 that lives only
in that node's network namespace (the address is added to the namespace's loopback); the
machine's own namespace never gets the address and never sends to it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import REGION, REPO_ROOT, aws_env, group_rules, make_cluster

pytestmark = pytest.mark.lab
INDEX = 100
STANDIN = Path(__file__).with_name("imds_standin.py")


@pytest.fixture(scope="module")
def aws_lab(tmp_path_factory, ec2):
    if os.geteuid() != 0:
        pytest.skip("the lab cluster needs root: run pytest as root")
    from ncclkit.lab import Lab

    lab = Lab(INDEX)
    lab.down()
    inventory = tmp_path_factory.mktemp("aws-lab") / "inventory"
    (inventory / "group_vars").mkdir(parents=True)
    lab.up(nodes=2, inventory_path=inventory / "hosts.yml")
    cluster = make_cluster(ec2, "lab-cluster")
    servers = []
    try:
        for node, instance in zip(lab.nodes(), cluster["instances"]):
            subprocess.run(["ip", "netns", "exec", node.netns, "ip", "addr", "add", "169.254.169.254/32", "dev", "lo"],
                           check=True)
            server = subprocess.Popen(lab.command(node.name, [sys.executable, str(STANDIN), "169.254.169.254", "80",
                                                              instance, REGION + "a"]),
                                      stdout=subprocess.PIPE, text=True)
            servers.append(server)
            assert server.stdout.readline().strip() == "listening"
        yield lab, inventory, cluster
    finally:
        for server in servers:
            server.terminate()
            server.wait(timeout=10)
        lab.down()


def run_site(inventory: Path, moto_url: str, credentials: dict, mode: str) -> tuple[int, str, float]:
    (inventory / "group_vars" / "all.yml").write_text(
        f"ncclkit_cloud: aws\ncloud_aws_region: {REGION}\ncloud_aws_endpoint_url: {moto_url}\n"
        f"cloud_aws_mode: {mode}\n")
    env = {**aws_env(credentials), "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"),
           "ANSIBLE_CALLBACK_RESULT_FORMAT": "json", "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0",
           "PYTHONPATH": f"{REPO_ROOT / 'src'}:{REPO_ROOT / 'collections'}"}
    started = time.monotonic()
    done = subprocess.run([str(Path(sys.executable).with_name("ansible-playbook")), "site.yml", "-i", str(inventory),
                           "-e", f"ansible_python_interpreter={sys.executable}"],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
    return done.returncode, done.stdout + done.stderr, time.monotonic() - started


def test_site_audit_then_apply_on_the_lab(aws_lab, ec2, moto_server, credentials):
    lab, inventory, cluster = aws_lab
    # A request without the token is refused, as EC2 refuses it.
    refused = lab.exec("node1", [sys.executable, "-c", "import urllib.request as u;"
                                 "u.urlopen('http://169.254.169.254/latest/meta-data/instance-id', timeout=2)"],
                       capture_output=True, text=True)
    assert "HTTP Error 401" in refused.stderr
    before = group_rules(ec2, cluster["group"])
    rc, output, seconds = run_site(inventory, moto_server["url"], credentials, "audit")
    assert rc == 0, output
    assert group_rules(ec2, cluster["group"]) == before
    # The inventory names no instance: these ids reached the controller from the nodes' IMDSv2.
    assert "Read the instance identity from IMDSv2] ***" in output
    for instance in cluster["instances"]:
        assert f"instance {instance} is in no placement group" in output
    assert f"security group {cluster['group']}: missing TCP 32768-60999 inbound from" in output
    rc, output, seconds = run_site(inventory, moto_server["url"], credentials, "apply")
    assert rc == 0, output
    after = group_rules(ec2, cluster["group"])
    assert len(after["in"]) == len(before["in"]) + 3
    print(f"site.yml audit+apply on lab {INDEX}: inbound rules {len(before['in'])} -> {len(after['in'])}, "
          f"apply took {seconds:.0f} s")
