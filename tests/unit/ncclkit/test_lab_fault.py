"""`ncclkit lab fault` without a lab: the kinds' table, the record inject keeps, clear's undo order,
and what a failed inject leaves (nothing). The steps themselves run in tests/lab/test_fault_lab.py."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from ncclkit.lab.errors import LabError
from ncclkit.lab.fault import kinds, manager, steps, store
from ncclkit.lab.fault.kinds import KINDS, FaultKind

REPO = Path(__file__).resolve().parents[3]
DOCUMENTED = set(re.findall(r"^\| `([a-z_]+)` \|", (REPO / "docs" / "check.md").read_text(), re.M))
DIAGNOSIS_DOC = (REPO / "docs" / "diagnosis.md").read_text()


def test_every_kind_declares_its_effect_and_codes():
    assert len(KINDS) >= 22
    for kind in KINDS.values():
        assert kind.layer in ("network", "host", "job"), kind.name
        assert kind.effect in ("fails", "hangs", "slower", "none"), kind.name
        assert kind.check is None or kind.check in DOCUMENTED, f"{kind.name}: {kind.check} not in docs/check.md"
        if kind.effect in ("none", "slower"):
            assert kind.diagnose is None, f"{kind.name} leaves the job alive: diagnose must raise no error"
        else:
            assert kind.diagnose, f"{kind.name} breaks the job: it needs an expected diagnose code"
    layers = {kind.layer for kind in KINDS.values()}
    assert layers == {"network", "host", "job"}


def test_the_issue_kinds_are_all_there():
    wanted = {"nccl_ports_rejected", "rendezvous_port_dropped", "gloo_ports_dropped_inbound", "eth1_down",
              "mtu_mismatch", "packet_loss", "link_throttled", "asymmetric_route", "hostname_public",
              "peer_unresolvable", "shm_small", "memlock_small", "stale_master_port", "profile_removed",
              "socket_ifname_missing", "nccl_setting_differs", "rank_stopped", "rank_killed", "rank_oom_killed",
              "rank_exception", "collective_desync", "rank_straggler"}
    assert wanted <= set(KINDS)


class FakeLab:
    """A lab's state dir and node list, no namespaces."""

    def __init__(self, folder: Path, names=("node1", "node2", "node3")):
        self.index = 7
        self.names = names
        self.state_dir = type("S", (), {"path": folder})()

    def nodes(self):
        return [type("N", (), {"name": name})() for name in self.names]


@pytest.fixture
def fake(tmp_path, monkeypatch):
    done = []
    monkeypatch.setitem(steps.UNDO, "probe", lambda lab, step: done.append(step["n"]))

    def two_steps(ctx):
        ctx.params["rate"] = ctx.rng.randint(1, 10**6)
        ctx.step({"op": "probe", "node": ctx.node, "n": 1})
        ctx.step({"op": "probe", "node": ctx.node, "n": 2})

    def fails_half_way(ctx):
        ctx.step({"op": "probe", "node": ctx.node, "n": 9})
        raise LabError("tc failed")

    monkeypatch.setitem(KINDS, "t_two", FaultKind("t_two", "host", "", "none", None, None, two_steps))
    monkeypatch.setitem(KINDS, "t_bad", FaultKind("t_bad", "host", "", "none", None, None, fails_half_way))
    return FakeLab(tmp_path), done


def test_inject_records_seed_params_and_undo_and_clear_replays_it_newest_first(fake):
    lab, done = fake
    first = manager.inject(lab, "t_two", node="node2", seed=5)
    assert first["node"] == "node2" and first["seed"] == 5
    assert first["params"]["rate"] == random.Random(5).randint(1, 10**6)   # drawn from the recorded seed
    assert [step["n"] for step in first["undo"]] == [1, 2]
    assert store.read(lab) == [first]
    with pytest.raises(LabError, match="already injected"):
        manager.inject(lab, "t_two", node="node2")
    manager.inject(lab, "t_two", node="node3", seed=6)
    cleared = manager.clear(lab)
    assert [record["node"] for record in cleared] == ["node2", "node3"]
    assert done == [2, 1, 2, 1]
    assert store.read(lab) == [] and not store.path(lab).parent.exists()


def test_a_node_is_drawn_when_none_is_named_and_unknown_ones_are_refused(fake):
    lab, dummy = fake
    assert manager.inject(lab, "t_two", seed=11)["node"] == random.Random(11).choice(lab.names)
    with pytest.raises(LabError, match="has no node9"):
        manager.inject(lab, "t_two", node="node9")
    with pytest.raises(LabError, match="unknown fault kind"):
        manager.inject(lab, "no_such_kind", node="node1")


def test_a_failed_inject_undoes_what_it_did_and_records_nothing(fake):
    lab, done = fake
    with pytest.raises(LabError, match="tc failed"):
        manager.inject(lab, "t_bad", node="node1")
    assert done == [9] and store.read(lab) == []


def test_a_step_that_cannot_be_undone_stays_recorded_for_the_next_clear(fake, monkeypatch):
    lab, done = fake
    manager.inject(lab, "t_two", node="node1", seed=1)

    def flaky(lab_, step):
        if step["n"] == 1:
            raise LabError("still busy")
        done.append(step["n"])
    monkeypatch.setitem(steps.UNDO, "probe", flaky)
    with pytest.raises(LabError, match="still busy"):
        manager.clear(lab)
    assert [step["n"] for step in store.read(lab)[0]["undo"]] == [1]


def test_undo_refuses_steps_it_does_not_know():
    with pytest.raises(LabError, match="unknown undo step"):
        steps.undo(None, {"op": "rm_rf", "node": "node1"})
    with pytest.raises(LabError, match="unknown undo step"):
        steps.undo(None, {"op": "kill", "node": "node1; reboot"})
    with pytest.raises(LabError, match="refusing nft rule"):
        steps.do_nft_rule(None, "node1", "input", "tcp dport 22 drop; flush ruleset")


def test_setting_a_variable_keeps_the_rest_of_the_file():
    text = "# managed\nexport NCCL_SOCKET_IFNAME='=eth1'\nexport GLOO_SOCKET_IFNAME='eth1'\n"
    edited = kinds._set_variable(text, "NCCL_SOCKET_IFNAME", "=eth9")
    assert edited == "# managed\nexport NCCL_SOCKET_IFNAME==eth9\nexport GLOO_SOCKET_IFNAME='eth1'\n"
    assert kinds._set_variable("NCCL_DEBUG=WARN\n", "NCCL_SOCKET_IFNAME", "=eth9") == "NCCL_DEBUG=WARN\n"
    assert kinds._set_variable(None, "NCCL_SOCKET_IFNAME", "x") is None


def test_the_master_port_is_read_from_the_launchers_command_not_its_comment():
    launcher = ("#!/bin/sh\n# Options given here win (--nproc-per-node 2, --master-port 29501).\n"
                "exec env python -m torch.distributed.run \\\n  --nnodes 2 --node-rank 0 \\\n"
                "  --master-addr 10.0.0.1 --master-port 29544 \\\n  --nproc-per-node 1 \"$@\"\n")

    class Node:
        def exec(self, node, argv, **kwargs):
            return type("Done", (), {"returncode": 0, "stdout": launcher})()
    assert kinds.master_port(kinds.Context(lab=Node(), node="node1", rng=random.Random(0))) == 29544
