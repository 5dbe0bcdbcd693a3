"""A filter deprecated through meta/runtime.yml's plugin_routing still works, and a play that uses it
warns, naming the replacement; a filter that is not deprecated does not warn."""

from __future__ import annotations

import yaml
from lab_playbook import play

from conftest import REPO_ROOT

NICS = {"n1": [{"name": "eth1", "mtu": 1500, "ipv4": [{"address": "10.0.0.11", "prefix": 24}]}],
        "n2": [{"name": "eth1", "mtu": 1500, "ipv4": [{"address": "10.0.0.12", "prefix": 24}]}]}


def _routing():
    return yaml.safe_load((REPO_ROOT / "meta" / "runtime.yml").read_text())["plugin_routing"]["filter"]


def test_cluster_nic_is_deprecated_with_a_removal_version():
    deprecation = _routing()["cluster_nic"]["deprecation"]
    assert deprecation["removal_version"] and "cluster_nics" in deprecation["warning_text"]


def _run(tmp_path, expression):
    (tmp_path / "hosts").write_text("localhost ansible_connection=local ansible_python_interpreter=auto_silent\n")
    (tmp_path / "play.yml").write_text(yaml.safe_dump([{
        "hosts": "localhost", "gather_facts": False,
        "tasks": [{"name": "Use the filter", "ansible.builtin.debug": {"msg": "chosen={{ " + expression + " }}"}}],
    }]))
    return play(tmp_path / "hosts", str(tmp_path / "play.yml"), {"nics": NICS},
                env={"ANSIBLE_DEPRECATION_WARNINGS": "1"}, timeout=120)


def test_a_play_using_cluster_nic_warns_and_still_gets_its_answer(tmp_path):
    played = _run(tmp_path, "(nics | ncclkit.cluster.cluster_nic('n1')).address")
    assert played.rc == 0, played.stdout
    assert "chosen=10.0.0.11" in played.stdout
    warning = " ".join(line for line in played.stdout.splitlines() if "DEPRECATION" in line)
    assert "ncclkit.cluster.cluster_nic" in warning and "cluster_nics" in warning, played.stdout


def test_a_filter_that_is_not_deprecated_does_not_warn(tmp_path):
    played = _run(tmp_path, "nics | ncclkit.cluster.rdma_usable_ports | length")
    assert played.rc == 0, played.stdout
    assert "DEPRECATION" not in played.stdout
