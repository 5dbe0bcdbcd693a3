"""nccl_pair_perf as Ansible runs it (JSON arguments in a file): a server and its client on
loopback measure both directions, the server is gone after its one test, bad input is refused."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time

import pytest

from ansible_collections.ncclkit.cluster.plugins.modules.nccl_pair_perf import _listening
from conftest import REPO_ROOT

MODULE = "ansible_collections.ncclkit.cluster.plugins.modules.nccl_pair_perf"
PORT = 29519


def module(tmp_path, **args):
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO_ROOT / "src"), str(REPO_ROOT / "collections")]))
    done = subprocess.run([sys.executable, "-m", MODULE, str(path)], capture_output=True, text=True, env=env,
                          timeout=60, check=False)
    return json.loads(done.stdout)


@pytest.mark.skipif(not shutil.which("iperf3"), reason="needs iperf3")
def test_a_server_and_its_client_measure_both_directions(tmp_path):
    served = module(tmp_path, role="server", address="127.0.0.1", port=PORT, timeout_s=20)
    assert served["error"] == "" and not served["changed"]
    measured = module(tmp_path, role="client", address="127.0.0.1", peer_address="127.0.0.1", port=PORT, seconds=1)
    assert measured["error"] == "", measured
    assert measured["forward_gbps"] > 0 and measured["reverse_gbps"] > 0
    assert measured["gbps"] == min(measured["forward_gbps"], measured["reverse_gbps"])
    # The one-shot server ends with its test: nothing listens on its port any more.
    deadline = time.monotonic() + 10
    while _listening(PORT) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _listening(PORT)


def test_addresses_must_be_ip_addresses(tmp_path):
    refused = module(tmp_path, role="client", address="-D", peer_address="127.0.0.1", port=PORT)
    assert refused["failed"] and refused["msg"] == ("address must be an IP address (the cluster address, "
                                                    "ncclkit_cluster_ip), not '-D'")
    assert module(tmp_path, role="server", address="127.0.0.1", port=0)["failed"]


@pytest.mark.skipif(not shutil.which("iperf3"), reason="needs iperf3")
def test_a_server_that_accepts_and_never_answers_times_out_with_a_clear_error(tmp_path):
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(4)                         # the kernel accepts; nothing ever answers
    port = silent.getsockname()[1]
    try:
        started = time.monotonic()
        measured = module(tmp_path, role="client", address="127.0.0.1", peer_address="127.0.0.1", port=port,
                          seconds=1, timeout_s=2)
        took = time.monotonic() - started
    finally:
        silent.close()
    assert measured["gbps"] is None and not measured.get("failed")
    assert "did not finish within 3 s: the iperf3 server at 127.0.0.1 port" in measured["error"], measured
    assert took < 20
