"""`ncclkit lab fault` on a real lab (lab 61), as CI runs it: one lab, one site.yml run, three fast kinds
in turn (a firewall rule, a killed rank, a Python exception), each: inject, `ncclkit check`, the
bounded Gloo job of benchmarks/fault_job.py on both nodes, `ncclkit diagnose` on its logs, clear,
`ncclkit check` READY again. The full matrix is benchmarks/fault_matrix.py, run by hand."""

from __future__ import annotations

import sys
import time

import pytest
from lab_helpers import REPO_ROOT, needs_root
from lab_indices import lab_index
from lab_playbook import lab_cluster, play

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
import fault_matrix  # noqa: E402

pytestmark = [pytest.mark.lab, needs_root]
INDEX = lab_index(__file__)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    yield from lab_cluster(INDEX, tmp_path_factory.mktemp(f"lab{INDEX}"), nodes=2)


@pytest.fixture(scope="module")
def converged(lab):
    done = play(lab.inventory_path, "site.yml", {"nccl_profile_python": sys.executable}, timeout=900)
    assert done.rc == 0, done.stdout[-3000:]
    assert fault_matrix.check(lab.inventory_path)["ready"]
    return lab


def run(lab, kind, node, tmp_path):
    started = time.monotonic()
    row = fault_matrix.one_run(lab, lab.inventory_path, kind, tmp_path / "corpus", None, seed=1)
    assert "error" not in row, row
    assert row["node"] == node and row["seed"] == 1
    assert row["cleared"] and row["ready_after_clear"], row   # clear undid exactly what inject did
    assert row["verdict_s"] < 15, row
    assert (tmp_path / "corpus" / f"{kind}-1" / "expected.json").exists()
    return row, time.monotonic() - started


def test_a_firewall_rejecting_the_listeners_breaks_the_job_and_clear_restores_it(converged, tmp_path):
    row, dummy = run(converged, "nccl_ports_rejected", "node1", tmp_path)
    assert row["job"]["effect"] in ("fails", "hangs"), row
    assert row["diagnose"]["rc"] == 1 and row["diagnose"]["code"], row   # an error, whatever it names today


def test_a_killed_rank_is_named_with_its_host_and_rank(converged, tmp_path):
    row, dummy = run(converged, "rank_killed", "node1", tmp_path)
    assert row["job"]["effect"] == "fails", row
    assert (row["diagnose"]["code"], row["diagnose"]["host"], row["diagnose"]["rank"]) == ("rank_killed", "node1", 0)


def test_an_exception_in_one_rank_is_pinned_to_that_rank(converged, tmp_path):
    row, dummy = run(converged, "rank_exception", "node1", tmp_path)
    assert row["job"]["effect"] == "fails", row
    # rank_exception is the goal (the diagnosis engine's next round); rank_failed names the rank today.
    assert row["diagnose"]["code"] in ("rank_exception", "rank_failed"), row
    assert (row["diagnose"]["host"], row["diagnose"]["rank"]) == ("node1", 0), row


def test_a_rank_outgrowing_the_nodes_memory_limit_is_named_oom_killed(converged, tmp_path):
    """The node's processes join the limited cgroup, the SSH master connection site.yml left open
    included: the job started over it is limited, and the kernel (not the rank) ends the rank."""
    row, dummy = run(converged, "rank_oom_killed", "node1", tmp_path)
    assert row["params"]["memory_limit_mib"] in (1536, 2048), row
    assert row["job"]["effect"] == "fails" and row["job"]["exit"]["node1"] != 0, row
    assert (row["diagnose"]["code"], row["diagnose"]["host"], row["diagnose"]["rank"]) == ("oom_killed", "node1", 0)
