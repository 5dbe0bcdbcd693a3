"""nccl_validate's autotune on a 2-node lab (index 50) after the real nccl_preflight and
nccl_profile, with a stand-in launcher and benchmark (tests/roles/nccl_validate/autotune_standin.py) whose
busbw depends on the tuning the ranks get: the choice, the profile rewritten with it, the kept
result, the report's table, and a second play that measures nothing and changes nothing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "lab"))
from lab_helpers import needs_root  # noqa: E402
from lab_indices import lab_index  # noqa: E402
from lab_playbook import lab_cluster, play  # noqa: E402

pytestmark = [pytest.mark.lab, needs_root]

INDEX = lab_index(__file__)
HERE = Path(__file__).resolve().parent
LOG = "/tmp/ncclkit-autotune-standin.log"
EXTRA = {
    "ncclkit_nccl_tests": {"available": True, "reason": "", "bin_dir": "/opt/autotune", "version": "2.19.6",
                           "nccl_version": "2.28.9", "mpi": True},
    "ncclkit_gpu_capabilities": {"present": True, "count": 1, "sm": [90]},
    "nccl_validate_mpirun": "/opt/autotune/ncclkit-mpirun",
    "nccl_validate_single_node": False,
    "nccl_validate_autotune": True,
    "nccl_profile_ssh_trust": False,
    "nccl_profile_python": sys.executable,
}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    for lab in lab_cluster(INDEX, tmp_path_factory.mktemp(f"lab{INDEX}"), nodes=2):
        for node in ("node1", "node2"):
            done = lab.exec(node, ["sh", "-c", "mkdir -p /opt/autotune && cat > /opt/autotune/standin.py && "
                                   "chmod +x /opt/autotune/standin.py && cd /opt/autotune && "
                                   "ln -sf standin.py ncclkit-mpirun && ln -sf standin.py all_reduce_perf"],
                            input=(HERE / "autotune_standin.py").read_bytes(), capture_output=True, timeout=30)
            assert done.returncode == 0, done.stderr
        yield lab


def node_sh(lab, node: str, script: str) -> str:
    done = lab.exec(node, ["sh", "-c", script], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout


def run(lab, workdir: Path, **extra):
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "extra.json").write_text(json.dumps({**EXTRA, **extra}))
    node_sh(lab, "node1", f"rm -f {LOG}")
    done = play(lab.inventory_path, str(HERE / "autotune.yml"), env={"PWD": str(workdir)},
                args=("-e", "@extra.json"), timeout=900, cwd=workdir)
    reports = sorted((workdir / "ncclkit-report").glob("2*"))
    report = json.loads((reports[-1] / "report.json").read_text()) if reports else {}
    calls = node_sh(lab, "node1", f"cat {LOG} 2>/dev/null || true").splitlines()
    return done, report, calls, reports[-1] if reports else None


def test_the_autotune_chooses_writes_the_profile_and_a_second_play_changes_nothing(lab, tmp_path):
    done, report, calls, folder = run(lab, tmp_path / "first")
    assert done.rc == 0, done.stdout[-4000:]
    tune = report["autotune"]
    assert tune["status"] == "measured" and tune["transport"] == "any"
    # 1 + 12 + 4 (channel counts) + 2 candidates 3 times, then the winner and the defaults 3 times,
    # and the multi-node run.
    assert len(tune["candidates"]) == 19 and tune["runs"] == 57 + 6 and len(calls) == 1 + 63
    grid_calls = calls[1:58]
    assert grid_calls[0] == "-e 536870912 " and grid_calls[19] == "-e 536870912 "  # interleaved: defaults each round
    assert "NCCL_MAX_NCHANNELS=8 NCCL_MIN_NCHANNELS=8 NCCL_NSOCKS_PERTHREAD=1" in calls[16]
    assert "NCCL_ALGO=Ring NCCL_NSOCKS_PERTHREAD=4 NCCL_PROTO=Simple NCCL_SOCKET_NTHREADS=2" in calls[18]
    # The stand-in peaks at 8 sockets (3.0 GB/s against the defaults' 1.5); Ring/Simple costs 30%.
    winner = tune["tuning"]
    assert set(winner) == {"NCCL_SOCKET_NTHREADS", "NCCL_NSOCKS_PERTHREAD"}
    assert int(winner["NCCL_SOCKET_NTHREADS"]) * int(winner["NCCL_NSOCKS_PERTHREAD"]) == 8
    table = {row["name"]: row for row in tune["candidates"]}
    assert 1.45 <= table["defaults"]["median"] <= 1.55 and table["common"]["beats"] is True
    assert table["common"]["median"] < table[tune["winner"]]["median"] and not table["threads=1 socks=2"]["beats"]
    assert 1.9 <= tune["remeasure"]["ratio"] <= 2.1 and tune["remeasure"]["low"] <= tune["remeasure"]["ratio"]
    # The profile carries the winner on both hosts, and the result is kept with the hardware.
    for node in ("node1", "node2"):
        conf = node_sh(lab, node, "cat /etc/nccl.conf")
        assert f"NCCL_SOCKET_NTHREADS={winner['NCCL_SOCKET_NTHREADS']}" in conf
        kept = json.loads(node_sh(lab, node, "cat /etc/ncclkit/autotune.json"))
        assert kept["tuning"] == winner and kept["fingerprint"]["nodes"] == 2
    assert "Autotune" in (folder / "report.md").read_text()
    assert "autotune" in (folder / "report.html").read_text()

    again, report2, calls2, dummy = run(lab, tmp_path / "second")
    assert again.rc == 0, again.stdout[-4000:]
    assert all(counts["changed"] == 0 for counts in again.recap.values()), again.recap
    assert report2["autotune"]["status"] == "kept" and report2["autotune"]["tuning"] == winner
    assert len(calls2) == 1  # the multi-node run alone: nothing measured again
