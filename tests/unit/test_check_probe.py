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
def test_the_probe_leaves_out_the_excluded_names_and_reports_a_closed_rendezvous(capsys):
    args = {"step": "probe", "source": "127.0.0.1", "exclude": ["node1"], "timeout": 1.0,
            "targets": {"node1": ["127.0.0.1"], "node2": ["127.0.0.1"], "node3": []},
            "master": {"addr": "127.0.0.2", "port": free_port()}}
    with patch_module_args(args), pytest.raises(SystemExit) as exit_info:
        nccl_check.main()
    result = json.loads(capsys.readouterr().out)
    assert exit_info.value.code == 0
    assert result["probes"]["hostname"] == {"node2": True, "node3": False}
    assert result["probes"]["master"] == "refused"
