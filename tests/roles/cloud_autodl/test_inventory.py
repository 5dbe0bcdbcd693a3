"""inventories/autodl: two instances on one gateway name, told apart by port."""

import json
import subprocess
import sys
from pathlib import Path

from conftest import REPO_ROOT


def test_two_instances_share_the_gateway_and_differ_by_port():
    done = subprocess.run([str(Path(sys.executable).with_name("ansible-inventory")), "-i",
                           str(REPO_ROOT / "inventories" / "autodl"), "--list"],
                          capture_output=True, text=True, cwd=REPO_ROOT,
                          env={"ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"), "PATH": "/usr/bin:/bin"}, check=False)
    assert done.returncode == 0, done.stderr
    hostvars = json.loads(done.stdout)["_meta"]["hostvars"]
    assert sorted(hostvars) == ["node1", "node2"]
    assert {v["ansible_host"] for v in hostvars.values()} == {"connect.westb.seetacloud.com"}
    assert len({v["ansible_port"] for v in hostvars.values()}) == 2
    assert all(v["ansible_user"] == "root" and v["ncclkit_cloud"] == "autodl" for v in hostvars.values())
