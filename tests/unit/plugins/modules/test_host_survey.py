"""nccl_host_survey: one module run answers everything nccl_preflight asks of a host."""

import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.ncclkit.cluster.plugins.modules import nccl_host_survey

TWO_GPUS = ('printf "%s\\n" "0, NVIDIA H200, 9.0, 580.159.04, 143771, 00000000:00:06.0" '
            '"1, NVIDIA H200, 9.0, 580.159.04, 143771, 00000000:00:07.0"')


def fake_smi(folder, body):
    """An nvidia-smi stand-in (no GPU here): a shell script that runs `body`."""
    script = folder / "nvidia-smi"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(0o755)
    return str(script)


def run_survey(capsys, args):
    """(exit code, facts with the result's other keys beside them)."""
    with patch_module_args(dict(args, _ansible_check_mode=True)), pytest.raises(SystemExit) as exit_info:
        nccl_host_survey.main()
    result = json.loads(capsys.readouterr().out)
    return exit_info.value.code, dict(result.pop("ansible_facts", {}), **result)


def test_one_run_reads_nics_gpus_rdma_and_container(capsys, tmp_path):
    port = tmp_path / "sys" / "class" / "infiniband" / "mlx5_0" / "ports" / "1"
    port.mkdir(parents=True)
    (port / "state").write_text("4: ACTIVE\n")
    (port / "link_layer").write_text("InfiniBand\n")
    (port / "rate").write_text("400 Gb/sec (4X NDR)\n")
    code, result = run_survey(capsys, {"nvidia_smi": fake_smi(tmp_path, TWO_GPUS), "sysfs": str(tmp_path / "sys"),
                                       "data_dir_candidates": [str(tmp_path)]})
    assert code == 0 and result["changed"] is False
    assert any(nic["name"] == "lo" and nic["loopback"] for nic in result["nccl_preflight_nics"])
    assert [gpu["pci_bus_id"] for gpu in result["nccl_preflight_gpus"]] == ["00000000:00:06.0", "00000000:00:07.0"]
    assert result["nccl_preflight_gpu_absent_reason"] == ""
    assert result["nccl_preflight_rdma_ports"] == ["mlx5_0|1|4: ACTIVE|InfiniBand||400 Gb/sec (4X NDR)"]
    # /dev/shm is sized, and the compute capabilities read, for the GPUs the same run found.
    assert result["ncclkit_container"]["gpu_count"] == 2 and result["ncclkit_container"]["data_dir"] == str(tmp_path)
    assert result["ncclkit_gpu_capabilities"]["sm"] == [90] and result["ncclkit_gpu_capabilities"]["count"] == 2
    assert set(result) >= {"ncclkit_cuda", "ncclkit_nccl", "ncclkit_mpi"} and "check_view" not in result


def test_the_check_view_asks_the_nccl_python(capsys, tmp_path):
    nccl = tmp_path / "nccl"
    (nccl / "include").mkdir(parents=True)
    (nccl / "lib").mkdir()
    (nccl / "include" / "nccl.h").write_text("#define NCCL_MAJOR 2\n#define NCCL_MINOR 28\n#define NCCL_PATCH 9\n")
    (nccl / "lib" / "libnccl.so.2").write_text("")
    code, result = run_survey(capsys, {"nvidia_smi": str(tmp_path / "none"), "sysfs": str(tmp_path), "check": True,
                                       "hostname": "localhost",
                                       "toolchain": {"nccl_source": "path", "nccl_home": str(nccl)}})
    assert code == 0 and result["ncclkit_nccl"]["version"] == "2.28.9"
    view = result["check_view"]
    assert view["hostname"] == "localhost" and view["resolved"] and view["topology"] == {}


def test_no_gpu_is_a_reason_not_a_failure(capsys, tmp_path):
    code, result = run_survey(capsys, {"nvidia_smi": str(tmp_path / "nvidia-smi"), "sysfs": str(tmp_path)})
    assert code == 0 and result["nccl_preflight_gpus"] == [] and result["nccl_preflight_rdma_ports"] == []
    assert result["nccl_preflight_gpu_absent_reason"].endswith("nvidia-smi not found")
    assert result["ncclkit_container"]["gpu_count"] == 0


def test_a_driver_message_instead_of_gpus_fails_naming_it(capsys, tmp_path):
    code, result = run_survey(capsys, {"nvidia_smi": fake_smi(tmp_path, "echo 'No devices were found'"),
                                       "sysfs": str(tmp_path)})
    assert code == 1 and "No devices were found" in result["msg"]


def test_a_required_gpu_that_is_absent_fails_naming_why(capsys, tmp_path):
    code, result = run_survey(capsys, {"nvidia_smi": str(tmp_path / "nvidia-smi"), "sysfs": str(tmp_path),
                                       "gpu_required": True})
    assert code == 1 and "nvidia-smi not found" in result["msg"] and "nccl_preflight_gpu_required" in result["msg"]
    code, result = run_survey(capsys, {"nvidia_smi": fake_smi(tmp_path, TWO_GPUS), "sysfs": str(tmp_path),
                                       "gpu_required": True})
    assert code == 0 and len(result["nccl_preflight_gpus"]) == 2


def test_an_empty_nvidia_smi_is_one_line_naming_the_variable(capsys, tmp_path):
    code, result = run_survey(capsys, {"nvidia_smi": " ", "sysfs": str(tmp_path)})
    assert code == 1 and "nccl_preflight_nvidia_smi" in result["msg"]
