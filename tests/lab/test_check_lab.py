"""`ncclkit check` on a fresh 2-node lab (lab 151): the rendezvous hang predicted with its fix;
after the profile (nccl_preflight + nccl_profile, as site.yml runs them) it passes."""

from __future__ import annotations

import json
import sys
import time

import pytest
from lab_helpers import REPO_ROOT, ncclkit, needs_root
from lab_indices import lab_index
from lab_playbook import lab_cluster, play

pytestmark = [pytest.mark.lab, needs_root]
INDEX = lab_index(__file__)
PROFILE_PLAYBOOK = REPO_ROOT / "tests" / "roles" / "nccl_profile" / "playbook.yml"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    yield from lab_cluster(INDEX, tmp_path_factory.mktemp(f"lab{INDEX}"), nodes=2)


def check(lab):
    started = time.monotonic()
    done = ncclkit("check", "-i", str(lab.inventory_path), "--json", timeout=300, cwd=REPO_ROOT)
    return done.returncode, json.loads(done.stdout), time.monotonic() - started


def test_fresh_lab_then_profile(lab):
    rc, document, seconds = check(lab)
    assert rc == 1, document
    errors = {(f["code"], f["host"]) for f in document["findings"] if f["severity"] == "error"}
    assert {("hostname_unreachable", "node1"), ("hostname_unreachable", "node2"),
            ("gloo_unpinned", "node1"), ("nccl_unpinned", "node2")} <= errors
    first = document["findings"][0]
    assert "GLOO_SOCKET_IFNAME=eth1" in first["fix"] and f"198.18.{INDEX}." in first["cause"]
    assert document["verdict"].startswith("NOT READY")
    assert seconds < 60

    profile = play(lab.inventory_path, str(PROFILE_PLAYBOOK), {"nccl_profile_python": sys.executable})
    assert profile.rc == 0, profile.stdout[-3000:]

    rc, document, dummy = check(lab)
    assert rc == 0, document["findings"]
    assert document["verdict"] == "READY: multi-node training should start here"
    assert {f["severity"] for f in document["findings"]} <= {"warning", "info"}
    assert document["master"]["addr"] == f"198.19.{INDEX}.11"
