"""nccl_check's probe step: every host is given one map of host names and leaves itself out."""

import json
import shutil
import socket

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.ncclkit.cluster.plugins.modules import nccl_check


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.skipif(shutil.which("ping") is None, reason="needs ping (iputils-ping)")
def probe(capsys, **args):
    with patch_module_args(dict({"step": "probe", "source": "127.0.0.1", "timeout": 1.0}, **args)), \
            pytest.raises(SystemExit) as exit_info:
        nccl_check.main()
    assert exit_info.value.code == 0
    return json.loads(capsys.readouterr().out)["probes"]


@pytest.mark.skipif(shutil.which("ping") is None, reason="needs ping (iputils-ping)")
def test_the_probe_leaves_itself_out_and_reports_a_closed_rendezvous(capsys):
    probes = probe(capsys, me="node1", peers="full",
                   targets={"node1": ["127.0.0.1"], "node2": ["127.0.0.1"], "node3": []},
                   master={"addr": "127.0.0.2", "port": free_port()})
    assert probes["hostname"] == {"node2": True, "node3": False}
    assert probes["master"] == "refused"


@pytest.mark.skipif(shutil.which("ping") is None, reason="needs ping (iputils-ping)")
def test_a_ring_probe_asks_the_neighbours_and_the_first_host_only(capsys):
    targets = {f"node{i}": ["127.0.0.1"] for i in range(8)}
    probes = probe(capsys, me="node4", peers="ring", targets=targets, master={})
    assert sorted(probes["hostname"]) == ["node0", "node3", "node5"]
    assert all(probes["hostname"].values()) and probes["master"] is None
