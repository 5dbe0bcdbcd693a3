"""The modules the roles no longer call (nccl_preflight reads the same through nccl_host_survey),
kept public for playbooks of one's own: each still runs, in check mode, and gives what the survey
gives from the same reader."""

from __future__ import annotations

import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.ncclkit.cluster.plugins.module_utils.host.container import container_facts
from ansible_collections.ncclkit.cluster.plugins.module_utils.host.nics import read_nics
from ansible_collections.ncclkit.cluster.plugins.modules import nccl_check, nccl_container, nccl_nics


def run(capsys, module, args):
    with patch_module_args({"_ansible_check_mode": True, **args}), pytest.raises(SystemExit) as exit_info:
        module.main()
    return exit_info.value.code, json.loads(capsys.readouterr().out)


def test_nccl_nics_lists_this_hosts_nics_as_the_survey_reads_them(capsys):
    code, result = run(capsys, nccl_nics, {})
    assert code == 0 and result["changed"] is False
    assert result["nics"] == read_nics()
    assert any(nic["loopback"] and nic["ipv4"][0]["address"] == "127.0.0.1" for nic in result["nics"])


def test_nccl_container_sets_the_fact_and_refuses_a_negative_gpu_count(capsys, tmp_path):
    code, result = run(capsys, nccl_container, {"gpu_count": 2, "data_dir_candidates": [str(tmp_path)]})
    assert code == 0 and result["changed"] is False
    fact = result["ansible_facts"]["ncclkit_container"]
    assert fact == container_facts(gpu_count=2, data_dir_candidates=[str(tmp_path)])
    assert fact["gpu_count"] == 2 and fact["data_dir"] == str(tmp_path)
    code, result = run(capsys, nccl_container, {"gpu_count": -1})
    assert code == 1 and result["msg"] == "gpu_count is -1: give the number of GPUs (0 or more)"


def test_nccl_check_gather_reads_the_view_the_survey_returns_as_check_view(capsys):
    code, result = run(capsys, nccl_check, {"step": "gather", "hostname": "localhost"})
    assert code == 0 and result["changed"] is False
    view = result["view"]
    assert "127.0.0.1" in view["resolved"] or "::1" in view["resolved"]
    assert {"start_paths", "profile_master", "shm_bytes", "memlock_kib", "kernel_log"} <= set(view)
