"""`ncclkit check`'s command line: bad inventories (exit 3) and unreachable hosts (exit 4)."""

import os
import subprocess
import sys

from conftest import REPO_ROOT
from ncclkit import exitcodes
from ncclkit.commands.check import CheckCollector, build_document


def ncclkit(*args, **kwargs):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "src"), str(REPO_ROOT / "collections")])}
    return subprocess.run([sys.executable, "-m", "ncclkit.cli", *args], capture_output=True, text=True,
                          env=env, check=False, **kwargs)


def test_bad_inventory_is_exit_3(tmp_path):
    missing = ncclkit("check", "-i", str(tmp_path / "nope.yml"), timeout=60)
    assert missing.returncode == 3 and "does not exist" in missing.stderr
    broken = tmp_path / "broken.yml"
    broken.write_text("cluster:\n  hosts: [unclosed\n")
    done = ncclkit("check", "-i", str(broken), timeout=60)
    assert done.returncode == 3 and "is broken" in done.stderr, done.stderr
    empty = tmp_path / "empty.yml"
    empty.write_text("all:\n  hosts: {}\n")
    done = ncclkit("check", "-i", str(empty), timeout=60)
    assert done.returncode == 3 and "no hosts in the group 'cluster'" in done.stderr


def test_unreachable_hosts_are_named_not_judged():
    collector = CheckCollector()
    collector({"event": "runner_on_unreachable",
               "event_data": {"host": "node2",
                              "res": {"msg": "ssh: connect to host 198.18.151.12 port 22: No route to host"}}})
    document = build_document(["node1", "node2"], collector, [{"host": "node2", "task": "x", "msg": "m"}])
    assert document["verdict"] == "NOT CHECKED: 1 host(s) unreachable: node2"
    assert document["unreachable"]["node2"].endswith("No route to host") and not document["ready"]
    assert exitcodes.UNREACHABLE == 4 and exitcodes.BAD_INPUT == 3


def test_the_judged_fact_is_the_document():
    collector = CheckCollector()
    collector({"event": "runner_on_ok", "event_data": {
        "host": "node1", "task_action": "ansible.builtin.set_fact",
        "res": {"ansible_facts": {"nccl_preflight_nics": []}}}})
    assert collector.check is None
    check = {"ready": True, "verdicts": {"node1": "node1: READY"}, "findings": [], "master": {}}
    collector({"event": "runner_on_ok", "event_data": {
        "host": "node1", "task_action": "ansible.builtin.set_fact",
        "res": {"ansible_facts": {"ncclkit_check": check}}}})
    document = build_document(["node1"], collector, [])
    assert document["ready"] and document["verdicts"] == {"node1": "node1: READY"}


def test_a_down_cluster_nic_that_stops_the_play_is_a_finding_on_its_host():
    # The NIC choice fails on every host (run on node1's and node2's view alike) and names the host whose NIC is down.
    message = ("node2's cluster NIC eth1 (10.0.0.12/24) is down (cluster_nic_down): no traffic reaches the other "
               "hosts. Bring it up on node2 (ip link set eth1 up) and find why it went down.")
    failures = [{"host": "node1", "task": "Fail when a host's cluster NIC cannot be chosen", "msg": message},
                {"host": "node2", "task": "Fail when a host's cluster NIC cannot be chosen", "msg": message},
                {"host": "node1", "task": "other", "msg": "node1 has no interface eth9 (nccl_preflight_ifname)"}]
    document = build_document(["node1", "node2", "node10"], CheckCollector(), failures)
    assert [(f["code"], f["host"], f["severity"]) for f in document["findings"]] == [
        ("cluster_nic_down", "node2", "error")]
    assert document["verdict"].startswith("NOT CHECKED: node1: Fail when") and not document["ready"]
    # A judged check keeps its own findings: the play's failures are not added to them.
    collector = CheckCollector()
    collector.check = {"ready": True, "verdicts": {}, "findings": [], "master": {}}
    assert build_document(["node1", "node2"], collector, failures)["findings"] == []
