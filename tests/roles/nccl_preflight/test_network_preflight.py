"""nccl_network's preflight on local stand-in hosts (no lab, no root): without
nccl_network_sources, the firewall would admit only the play's hosts, so a play that leaves a
cluster host out (--limit, a failed host, no cluster address) must stop before any rule."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from lab_playbook import Played, play

PLAYBOOK = """
- name: Check nccl_network's inputs
  hosts: cluster
  gather_facts: false
  roles:
    - role: ncclkit.cluster.nccl_network
"""
# The role's preflight is tagged always; a tag nothing carries runs it alone.
ONLY_PREFLIGHT = ("--tags", "ncclkit_no_such_tag")


def run(tmp_path: Path, hosts: dict, *args: str, variables: dict | None = None, tags=ONLY_PREFLIGHT,
        env_extra: dict | None = None, structured: bool = False) -> Played:
    inventory = {"all": {"children": {"cluster": {"hosts": hosts}},
                         "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}
    (tmp_path / "hosts.json").write_text(json.dumps(inventory))
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    # The role reads SSH_CONNECTION for the port the controller dials: only the test's own, if any.
    return play(tmp_path / "hosts.json", str(tmp_path / "play.yml"), variables, args=(*tags, *args), timeout=120,
                env={"SSH_CONNECTION": None, **(env_extra or {})}, structured=structured)


def host(index: int) -> dict:
    return {"ncclkit_cluster_ifname": "eth1", "ncclkit_cluster_ip": f"198.19.0.{index}"}


ALL = {"node1": host(1), "node2": host(2), "node3": host(3)}


def test_every_host_with_its_address_passes(tmp_path):
    done = run(tmp_path, ALL)
    assert done.rc == 0, done.stdout[-2000:]


def test_a_limited_play_without_sources_is_refused(tmp_path):
    done = run(tmp_path, ALL, "--limit", "node1,node2")
    assert done.rc != 0
    assert "--limit node1,node2" in done.stdout and "nccl_network_sources" in done.stdout


def test_a_limited_play_with_sources_passes(tmp_path):
    done = run(tmp_path, ALL, "--limit", "node1", variables={"nccl_network_sources": ["198.19.0.0/24"]})
    assert done.rc == 0, done.stdout[-2000:]


def test_a_host_without_cluster_address_is_named_by_the_others(tmp_path):
    done = run(tmp_path, {**ALL, "node3": {}})
    assert done.rc != 0
    assert "node3 failed or has no cluster address" in done.stdout
    recap = done.stdout.split("PLAY RECAP")[1]
    assert all(f"{node} " in recap for node in ALL) and recap.count("failed=1") == 3  # node1, node2 stop too


def test_absent_needs_no_addresses(tmp_path):
    done = run(tmp_path, {"node1": {}}, "--limit", "node1", variables={"nccl_network_state": "absent"})
    assert done.rc == 0, done.stdout[-2000:]


def test_the_facts_say_the_firewall_step_did_not_run_when_tags_leave_it_out(tmp_path):
    # The install step alone, with nothing to install: the report still runs and records the facts.
    done = run(tmp_path, {"node1": host(1)}, "--check", tags=("--tags", "nccl_network_install"),
               variables={"nccl_network_install_packages": False}, structured=True)
    assert done.rc == 0, done.stdout[-2000:]
    recorded = done.task("Record ncclkit_network for the roles that follow")["node1"]["ansible_facts"]
    assert recorded["ncclkit_network"]["firewall"] == "not run" and recorded["ncclkit_network"]["passed"] is None


def test_sshd_listening_inside_the_range_is_refused_though_the_controller_dials_22(tmp_path):
    # A NAT forwards the controller's port 22 to sshd on 40022, inside NCCL's range.
    nat = {"SSH_CONNECTION": "203.0.113.5 51234 10.0.0.11 40022"}
    done = run(tmp_path, {"node1": host(1)}, "--limit", "node1", env_extra=nat,
               variables={"nccl_network_sources": ["198.19.0.0/24"]})
    assert done.rc != 0 and "SSH port 40022 (sshd's port" in done.stdout and "among NCCL's ports" in done.stdout
    outside = {"SSH_CONNECTION": "203.0.113.5 51234 10.0.0.11 2222"}
    done = run(tmp_path, {"node1": host(1)}, "--limit", "node1", env_extra=outside,
               variables={"nccl_network_sources": ["198.19.0.0/24"]})
    assert done.rc == 0, done.stdout[-2000:]


def test_the_port_the_controller_dials_is_checked_without_ssh_connection(tmp_path):
    done = run(tmp_path, {"node1": {**host(1), "ansible_port": 29500}}, "--limit", "node1",
               variables={"nccl_network_sources": ["198.19.0.0/24"]})
    assert done.rc != 0 and "SSH port 29500 (sshd's port" in done.stdout


def test_a_gateway_port_inside_the_range_is_not_the_hosts_own(tmp_path):
    # AutoDL: the controller dials the gateway's port 41022, which forwards to sshd on 22.
    gateway = {"SSH_CONNECTION": "203.0.113.5 51234 10.0.0.11 22"}
    done = run(tmp_path, {"node1": {**host(1), "ansible_port": 41022}}, "--limit", "node1",
               env_extra=gateway, variables={"nccl_network_sources": ["198.19.0.0/24"]})
    assert done.rc == 0, done.stdout[-2000:]
