"""/dev/shm where cuMem host memory carries NCCL's SHM transport: NCCL 2.24 or later with a CUDA driver
of 12.6 or later, unless NCCL_CUMEM_ENABLE or NCCL_CUMEM_HOST_ENABLE is 0 (NVIDIA/nccl v2.24.3-1
src/misc/cudawrap.cc, ncclCuMemHostEnable: on for cudaDriverVersion >= 12060; src/transport/shm.cc
allocates with ncclCuMemHostAlloc then). A small /dev/shm is then a warning; otherwise an error as before."""

from __future__ import annotations

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.check.findings import host_findings
from ansible_collections.ncclkit.cluster.plugins.module_utils.clouds.autodl.plan import autodl_plan
from ansible_collections.ncclkit.cluster.plugins.module_utils.host import container as cf


@pytest.mark.parametrize("nccl,driver,settings,cumem", [
    ("2.24.3", "12.6", {}, True),
    ("2.28.9", "13.0", {"NCCL_CUMEM_ENABLE": "1"}, True),
    ("2.23.4", "12.8", {}, False),                          # NCCL too old
    ("2.27.3", "12.5", {}, False),                          # driver too old
    ("2.27.3", "12.8", {"NCCL_CUMEM_ENABLE": "0"}, False),
    ("2.27.3", "12.8", {"NCCL_CUMEM_HOST_ENABLE": "0"}, False),
    ("", "12.8", {}, False),                                # unknown: the current rule
    ("2.27.3", "", {}, False),
])
def test_cumem_host_memory_by_the_three_conditions(nccl, driver, settings, cumem):
    assert cf.shm_cumem_host(nccl, driver, settings) is cumem


def test_nccl_conf_and_the_fact():
    assert cf.nccl_conf_settings("# cuMem\nNCCL_CUMEM_HOST_ENABLE=0\n\nNCCL_DEBUG=WARN\n") == {
        "NCCL_CUMEM_HOST_ENABLE": "0", "NCCL_DEBUG": "WARN"}
    facts = {"pid1": "sshd", "systemd": False, "proc_sys_writable": False, "net_admin": False,
             "ip_local_port_range": [32768, 60999], "shm_bytes": 64 * cf.MIB, "shm_required_bytes": 160 * cf.MIB,
             "gpu_count": 2, "network_turbo": False, "data_dir": "", "shm_ok": False}
    cf.add_cumem_facts(facts, "2.27.3", "12.8", {})
    assert facts["shm_cumem"] is True and facts["cuda_driver_version"] == "12.8"
    assert any("without cuMem host memory, which it uses here" in line for line in facts["adaptations"])
    # No libcuda here: an empty version, never an exception.
    assert cf.read_cuda_driver_version("libcuda-not-here.so.1") == ""


SMALL = {"shm_ok": False, "shm_bytes": 64 * cf.MIB, "shm_required_bytes": 160 * cf.MIB, "gpu_count": 2}


def test_autodl_warns_instead_of_failing_where_cumem_carries_the_transport():
    plan = autodl_plan("node1", {**SMALL, "shm_cumem": True, "cuda_driver_version": "12.8"}, False, {},
                       "/root/autodl-tmp", False)
    assert plan["error"] is None and plan["facts"]["ncclkit_cloud_nccl_env"] == {}   # no NCCL_SHM_DISABLE
    assert plan["messages"][0].startswith("node1: /dev/shm is 64 MiB, below the 160 MiB")
    assert "CUDA driver 12.8" in plan["messages"][0] and "warning" in plan["messages"][0]
    assert autodl_plan("node1", {**SMALL, "shm_cumem": False}, False, {}, "/root/autodl-tmp", False)["error"]


@pytest.mark.parametrize("cumem,severity", [(True, "warning"), (False, "error")])
def test_the_check_finding_follows_cumem(cumem, severity):
    view = {"hostname": "node1", "resolved": ["10.0.0.1"], "shm_bytes": 64 << 20, "gpu_count": 8,
            "shm_cumem": cumem}
    shm = [found for found in host_findings("node1", {"node1": view}, []) if found["code"] == "shm_small"]
    assert [found["severity"] for found in shm] == [severity]
    assert ("cuMem host memory" in shm[0]["cause"]) is cumem
