"""site.yml on a 2-node lab (index 132): converged, then changed by hand on node1 (the nftables
ruleset flushed, /etc/nccl.conf deleted): the next run repairs both and reports the changes on
node1 only; an MTU changed by hand is not the roles' to set on the lab, and the run names it
(mtu_mismatch). Whatever a converged host skips (state stamps), these must hold. Marked `lab`
(root; a few minutes)."""

from __future__ import annotations

from pathlib import Path

import pytest
from lab_helpers import needs_root
from lab_indices import lab_index
from lab_playbook import lab_cluster, play
from network_helpers import sh

pytestmark = [pytest.mark.lab, needs_root]

INDEX = lab_index(__file__)
SITE = str(Path(__file__).resolve().parents[2] / "site.yml")


@pytest.fixture(scope="module")
def converged(tmp_path_factory):
    for lab in lab_cluster(INDEX, tmp_path_factory.mktemp(f"lab{INDEX}"), nodes=2):
        first = play(lab.inventory_path, SITE, timeout=900)
        assert first.rc == 0, first.stdout[-5000:]
        second = play(lab.inventory_path, SITE, timeout=900)
        assert second.rc == 0 and set(second.changed().values()) == {0}, second.stdout[-5000:]
        yield lab


def test_a_node_changed_by_hand_is_repaired_and_reported(converged):
    lab = converged
    conf = sh(lab, "node1", "cat /etc/nccl.conf")
    rules = sh(lab, "node1", "nft -s list table inet ncclkit")
    sh(lab, "node1", "nft flush ruleset && rm /etc/nccl.conf")
    repaired = play(lab.inventory_path, SITE, timeout=900)
    assert repaired.rc == 0, repaired.stdout[-5000:]
    assert repaired.changed()["node1"] > 0 and repaired.changed()["node2"] == 0, repaired.recap
    assert sh(lab, "node1", "cat /etc/nccl.conf") == conf
    assert sh(lab, "node1", "nft -s list table inet ncclkit") == rules


def test_an_mtu_changed_by_hand_is_named(converged):
    lab = converged
    sh(lab, "node1", "ip link set eth1 mtu 9000")
    try:
        run = play(lab.inventory_path, SITE, timeout=900)
    finally:
        sh(lab, "node1", "ip link set eth1 mtu 1500")
    assert run.rc != 0
    assert "mtu_mismatch (node1 -> node2)" in run.flat(), run.stdout[-5000:]
