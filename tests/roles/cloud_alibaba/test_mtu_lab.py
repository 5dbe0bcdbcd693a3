"""The MTU proven end to end on `ncclkit lab up --mtu 8500` (lab 130) with node2 left at 1500:
the network check names node2; cloud_alibaba's audit names it too and changes nothing; apply
gives it 8500, after which the full-size don't-fragment pings pass; a second apply changes nothing."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import yaml
from lab_playbook import Played, lab_cluster, play

from ncclkit.lab import Lab

sys.path.insert(0, str(Path(__file__).parent))
from ecs_standin import EcsStandin  # noqa: E402
from lab_indices import lab_index  # noqa: E402

pytestmark = pytest.mark.lab
INDEX = lab_index(__file__)
PLAYBOOK = "tests/roles/cloud_alibaba/playbook.yml"
KEY, SECRET = "LTAI" + os.urandom(8).hex(), os.urandom(16).hex()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    folder = tmp_path_factory.mktemp(f"lab{INDEX}")
    for lab in lab_cluster(INDEX, folder, nodes=2, mtu=8500):
        # The same inventory, each host naming its ECS instance (as inventories/alibaba does).
        inventory = yaml.safe_load(lab.inventory_path.read_text())
        for name, host in inventory["cluster"]["hosts"].items():
            host["alibaba_instance_id"] = f"i-bp1{name}"
        (folder / "ecs.yml").write_text(yaml.safe_dump(inventory))
        lab.ecs_inventory = folder / "ecs.yml"
        yield lab


@pytest.fixture
def ecs():
    instances = {f"i-bp1node{i}": {"EnableJumboFrame": True, "SecurityGroupIds": ["sg-bp1lab"]} for i in (1, 2)}
    groups = {"sg-bp1lab": {"InnerAccessPolicy": "Drop", "Permissions": []}}
    with EcsStandin({KEY: SECRET}, instances, groups) as server:
        yield server


def run(lab: Lab, ecs: EcsStandin | None = None, **variables) -> Played:
    extra = {"ncclkit_cloud": "alibaba", "nccl_network_install_packages": False, **variables}
    env, inventory = {}, lab.inventory_path
    if ecs:
        extra.update(cloud_alibaba_region="cn-hangzhou", cloud_alibaba_endpoint=ecs.endpoint,
                     cloud_alibaba_protocol="HTTP")
        env = {"ALIBABA_CLOUD_ACCESS_KEY_ID": KEY, "ALIBABA_CLOUD_ACCESS_KEY_SECRET": SECRET,
               "ALIBABA_CLOUD_ECS_METADATA_DISABLED": "true"}
        inventory = lab.ecs_inventory
    return play(inventory, PLAYBOOK, extra, env)


def mtu(lab: Lab, node: str) -> int:
    return int(lab.exec(node, ["cat", "/sys/class/net/eth1/mtu"], capture_output=True, text=True).stdout)


def test_a_host_left_at_1500_is_named_then_fixed(lab, ecs):
    assert lab.exec("node2", ["ip", "link", "set", "dev", "eth1", "mtu", "1500"]).returncode == 0
    audit = run(lab, ecs)
    assert audit.rc != 0
    out = audit.flat()
    assert "node2's eth1 has MTU 1500, not 8500 like the cluster" in out
    assert "node1's eth1 has MTU 8500, not" not in out
    assert "MTU mismatch" in out and "node2" in out.split("MTU mismatch", 1)[1][:200]
    assert mtu(lab, "node2") == 1500            # audit changed nothing
    assert ecs.writes() == [] and ecs.rejected == []
    assert "sg-bp1lab: missing ingress TCP 32768/60999 from 198.19.130.0/24" in out

    applied = run(lab, ecs, cloud_alibaba_mode="apply")
    assert applied.rc == 0, applied.stdout[-3000:]
    assert mtu(lab, "node2") == 8500
    assert "not persisted: nothing configures this NIC" in applied.flat()
    print(f"\nMTU set and proven (preflight + cloud_alibaba apply + nccl_network) in {applied.seconds:.1f} s")

    assert ecs.writes() == ["AuthorizeSecurityGroup", "AuthorizeSecurityGroup"]

    again = run(lab, ecs, cloud_alibaba_mode="apply")
    assert again.rc == 0
    assert all(host["changed"] == 0 for host in again.recap.values()), again.recap
    assert len(ecs.writes()) == 2                # the second apply sent no write
    assert KEY not in again.stdout and SECRET not in again.stdout


def test_an_mtu_above_a_nics_limit_changes_no_host(lab):
    before = {node: mtu(lab, node) for node in ("node1", "node2")}
    done = run(lab, cloud_alibaba_mode="apply", cloud_alibaba_mtu="70000")
    assert done.rc != 0
    assert "MTU 70000 is outside 576-65535" in done.flat() and "No host was changed" in done.flat()
    assert {node: mtu(lab, node) for node in ("node1", "node2")} == before
