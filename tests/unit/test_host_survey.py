"""nccl_host_survey: one module run answers what nccl_preflight used to ask in five."""

import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.ncclkit.cluster.plugins.modules import nccl_host_survey
from test_nvidia_smi import fake_smi

TWO_GPUS = ('printf "%s\\n" "0, NVIDIA H200, 9.0, 580.159.04, 143771, 00000000:00:06.0" '
            '"1, NVIDIA H200, 9.0, 580.159.04, 143771, 00000000:00:07.0"')


def run_survey(capsys, args):
    with patch_module_args(dict(args, _ansible_check_mode=True)), pytest.raises(SystemExit) as exit_info:
        nccl_host_survey.main()
    return exit_info.value.code, json.loads(capsys.readouterr().out)


def test_one_run_reads_nics_gpus_rdma_and_container(capsys, tmp_path):
    port = tmp_path / "sys" / "class" / "infiniband" / "mlx5_0" / "ports" / "1"
    port.mkdir(parents=True)
    (port / "state").write_text("4: ACTIVE\n")
    (port / "link_layer").write_text("InfiniBand\n")
    code, result = run_survey(capsys, {"nvidia_smi": fake_smi(tmp_path, TWO_GPUS), "sysfs": str(tmp_path / "sys"),
                                       "data_dir_candidates": [str(tmp_path)]})
    assert code == 0 and result["changed"] is False
    assert any(nic["name"] == "lo" and nic["loopback"] for nic in result["nics"])
    assert [gpu["pci_bus_id"] for gpu in result["gpus"]] == ["00000000:00:06.0", "00000000:00:07.0"]
    assert result["gpu_absent_reason"] == ""
    assert result["rdma_ports"] == ["mlx5_0|1|4: ACTIVE|InfiniBand|"]
    # /dev/shm is sized for the GPUs the same run found.
    assert result["container"]["gpu_count"] == 2 and result["container"]["data_dir"] == str(tmp_path)


def test_no_gpu_is_a_reason_not_a_failure(capsys, tmp_path):
    code, result = run_survey(capsys, {"nvidia_smi": str(tmp_path / "nvidia-smi"), "sysfs": str(tmp_path)})
    assert code == 0 and result["gpus"] == [] and result["rdma_ports"] == []
    assert result["gpu_absent_reason"].endswith("nvidia-smi not found")
    assert result["container"]["gpu_count"] == 0


def test_a_driver_message_instead_of_gpus_fails_naming_it(capsys, tmp_path):
    code, result = run_survey(capsys, {"nvidia_smi": fake_smi(tmp_path, "echo 'No devices were found'"),
                                       "sysfs": str(tmp_path)})
    assert code == 1 and "No devices were found" in result["msg"]
