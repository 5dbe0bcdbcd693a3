"""16 nodes on one machine (lab index 92): up, Ansible reaches every node, down; with timings."""

from __future__ import annotations

import time

import pytest
from lab_helpers import ansible_ping, leftovers, needs_root, pong_hosts
from lab_indices import lab_index

from ncclkit.lab import Lab

pytestmark = [pytest.mark.lab, pytest.mark.slow, needs_root]

INDEX = lab_index(__file__)
NODES = 16


def test_sixteen_nodes_answer_ansible_ping(tmp_path, record_property, capsys):
    inventory = tmp_path / "hosts.yml"
    lab = Lab(INDEX)
    lab.down()
    timings = {}
    try:
        started = time.monotonic()
        assert lab.up(nodes=NODES, outsider=True, inventory_path=inventory) is True
        timings["up"] = time.monotonic() - started
        assert lab.status()["healthy"]

        started = time.monotonic()
        result = ansible_ping(inventory, "cluster", forks=NODES)
        timings["ansible ping"] = time.monotonic() - started
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        assert pong_hosts(result.stdout) == {f"node{i}" for i in range(1, NODES + 1)}
    finally:
        started = time.monotonic()
        lab.down()
        timings["down"] = time.monotonic() - started
    assert leftovers(INDEX, inventory) == []
    for name, seconds in timings.items():
        record_property(f"{name} s", round(seconds, 2))
    with capsys.disabled():
        print(f"\n{NODES}-node lab: " + ", ".join(f"{name} {seconds:.2f} s"
                                                  for name, seconds in timings.items()))
    assert timings["up"] < 60 and timings["down"] < 30
