"""Bringing labs up and down (lab index 91): nothing left behind, failures cleaned up."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from lab_helpers import leftovers, ncclkit, needs_root
from lab_indices import lab_index

from ncclkit.lab import Lab, LabError, netns, node

pytestmark = [pytest.mark.lab, needs_root]

INDEX = lab_index(__file__)


@pytest.fixture
def lab():
    lab = Lab(INDEX)
    lab.down()
    yield lab
    lab.down()


def test_down_leaves_nothing(lab, tmp_path):
    inventory = tmp_path / "hosts.yml"
    lab.up(nodes=2, outsider=True, inventory_path=inventory)
    # Something roles would leave: a process started over ssh-like exec, still running.
    lab.exec("node1", "setsid sleep 1000 </dev/null >/dev/null 2>&1 &")
    pids = [pid for pids in netns.namespace_pids(netns.lab_namespaces(INDEX)).values()
            for pid in pids]
    assert len(pids) >= 4   # 3 holders, the sleep (and sshd children of health checks)
    assert leftovers(INDEX, inventory)   # the check sees a lab that is up
    assert lab.down() is True
    assert leftovers(INDEX, inventory) == []
    assert not any(node.is_running(pid) for pid in pids)


def test_down_when_nothing_is_up_is_harmless(lab):
    assert lab.down() is False
    result = ncclkit("lab", "down", "--index", str(INDEX))
    assert result.returncode == 0 and "nothing to remove" in result.stdout
    assert leftovers(INDEX) == []


def test_cli_up_status_down(lab, tmp_path):
    inventory = tmp_path / "inventory.yml"
    result = ncclkit("lab", "up", "--index", str(INDEX), "--nodes", "1", "--mtu", "9000",
                     "--inventory", str(inventory))
    assert result.returncode == 0, result.stderr
    assert "lab 91 is up: 1 node in" in result.stdout and inventory.exists()
    assert lab.exec("node1", ["cat", "/sys/class/net/eth1/mtu"], capture_output=True,
                    text=True).stdout == "9000\n"
    status = ncclkit("lab", "status", "--index", str(INDEX))
    assert status.returncode == 0 and "node1" in status.stdout and "ssh ok" in status.stdout
    result = ncclkit("lab", "down", "--index", str(INDEX))
    assert result.returncode == 0 and "lab 91 is down" in result.stdout
    status = ncclkit("lab", "status", "--index", str(INDEX))
    assert (status.returncode, status.stdout) == (1, "lab 91: down\n")
    assert leftovers(INDEX, inventory) == []


def test_failure_half_way_cleans_up(lab, tmp_path, monkeypatch):
    inventory = tmp_path / "hosts.yml"
    # node2's holder dies at once, as a broken sshd would.
    real = node.holder_argv
    monkeypatch.setattr(node, "holder_argv", lambda state, member, sshd: (
        ["sh", "-c", "echo sshd exploded >&2; exit 1"] if member.name == "node2"
        else real(state, member, sshd)))
    with pytest.raises(LabError, match="node2 did not start: sshd exploded"):
        lab.up(nodes=3, inventory_path=inventory)
    assert leftovers(INDEX, inventory) == []


def test_interrupted_up_leaves_nothing(lab, tmp_path, monkeypatch):
    inventory = tmp_path / "hosts.yml"

    def interrupt(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(node, "wait_ready", interrupt)
    with pytest.raises(KeyboardInterrupt):
        lab.up(nodes=2, outsider=True, inventory_path=inventory)
    assert leftovers(INDEX, inventory) == []


def test_broken_lab_is_reported_and_up_says_what_to_do(lab, tmp_path):
    inventory = tmp_path / "hosts.yml"
    lab.up(nodes=2, inventory_path=inventory)
    os.kill(lab.node("node2").pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while lab.status()["healthy"] and time.monotonic() < deadline:
        time.sleep(0.05)
    status = lab.status()
    assert status["state"] == "broken"
    assert any("node2" in problem for problem in status["problems"])
    assert ncclkit("lab", "status", "--index", str(INDEX)).returncode == 1
    with pytest.raises(LabError, match=f"broken.*down --index {INDEX}"):
        lab.up(nodes=2, inventory_path=inventory)
    assert lab.down() is True
    assert leftovers(INDEX, inventory) == []


def test_up_again_with_another_inventory_moves_it(lab, tmp_path):
    first, second = tmp_path / "a.yml", tmp_path / "b.yml"
    lab.up(nodes=1, inventory_path=first)
    assert lab.up(nodes=1, inventory_path=second) is False
    assert not first.exists() and second.exists()
    assert lab.inventory_path == second
    second.unlink()   # someone removed it: the next up writes it again
    assert lab.up(nodes=1, inventory_path=second) is False and second.exists()


def test_down_keeps_an_inventory_it_did_not_write(lab, tmp_path):
    inventory = tmp_path / "hosts.yml"
    lab.up(nodes=1, inventory_path=inventory)
    inventory.write_text("# my own inventory\nall: {}\n")
    lab.down()
    assert inventory.read_text() == "# my own inventory\nall: {}\n"


def test_leftovers_without_state_are_cleaned_by_up(lab, tmp_path):
    inventory = tmp_path / "hosts.yml"
    lab.up(nodes=1, inventory_path=inventory)
    Path(f"/run/ncclkit-lab/{INDEX}/state.json").unlink()   # as if `up` had been killed
    assert lab.status()["state"] == "broken"
    assert lab.up(nodes=2, inventory_path=inventory) is True
    assert [info.name for info in lab.nodes()] == ["node1", "node2"]
    assert lab.status()["healthy"]


def test_default_inventory_goes_into_the_checkout(lab, tmp_path):
    (tmp_path / "galaxy.yml").write_text("namespace: demo\nname: checkout\n")
    (tmp_path / "roles").mkdir()
    result = ncclkit("lab", "up", "--index", str(INDEX), "--nodes", "1", cwd=tmp_path / "roles")
    assert result.returncode == 0, result.stderr
    inventory = tmp_path / "inventories" / "lab" / "hosts.yml"
    assert f"inventory: {inventory}" in result.stdout and inventory.exists()
    assert ncclkit("lab", "down", "--index", str(INDEX)).returncode == 0
    assert leftovers(INDEX, inventory) == []
