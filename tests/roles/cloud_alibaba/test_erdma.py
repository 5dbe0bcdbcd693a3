"""eRDMA on Alibaba Cloud: found by driver (compat mode names the devices rocep*), NCCL's IB transport
enabled on exactly those devices with the NCCL version's rules, and a fall-back to sockets failed.

The fake sysfs trees follow the kernel's documented layout of /sys/class/infiniband
(Documentation/ABI/stable/sysfs-class-infiniband: ports/N/state, ports/N/link_layer,
device/driver) with the erdma driver of drivers/infiniband/hw/erdma; what eRDMA is:
https://www.alibabacloud.com/help/en/ecs/user-guide/erdma-overview
"""

from __future__ import annotations

import os

import pytest

from ansible_collections.ncclkit.cluster.plugins.filter.profile import expected_transport
from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.log import read_nccl_log
from ansible_collections.ncclkit.cluster.plugins.module_utils.host.rdma import (
    erdma_devices,
    read_port_lines,
    usable_rdma_ports,
)
from ansible_collections.ncclkit.cluster.plugins.module_utils.profile.env import env_problems, profile_env
from ansible_collections.ncclkit.cluster.plugins.module_utils.report import run_verdict
from conftest import SAMPLES


def rdma_device(root, name, driver, state="4: ACTIVE", link_layer="Ethernet"):
    device = root / "class" / "infiniband" / name
    port = device / "ports" / "1"
    port.mkdir(parents=True)
    (port / "state").write_text(state + "\n")
    (port / "link_layer").write_text(link_layer + "\n")
    driver_dir = root / "bus" / "pci" / "drivers" / driver
    driver_dir.mkdir(parents=True, exist_ok=True)
    pci = root / "devices" / f"pci-{name}"
    pci.mkdir(parents=True)
    os.symlink(driver_dir, pci / "driver")
    os.symlink(pci, device / "device")


def profile_script_lines(sysfs):
    """nccl_preflight's own RDMA listing, pointed at a fake /sys."""
    return read_port_lines(str(sysfs))


@pytest.fixture
def erdma_host(tmp_path):
    rdma_device(tmp_path, "rocep0s5", "erdma")            # compat mode: a RoCE-like name
    rdma_device(tmp_path, "erdma_1", "erdma", state="1: DOWN")
    return profile_script_lines(tmp_path)


def test_erdma_is_found_by_driver_not_by_name(erdma_host, tmp_path):
    assert erdma_devices(erdma_host) == ["rocep0s5"]          # the DOWN port is not usable
    mellanox = tmp_path / "mlx"
    rdma_device(mellanox, "mlx5_0", "mlx5_core", link_layer="InfiniBand")
    lines = profile_script_lines(mellanox)
    assert erdma_devices(lines) == [] and usable_rdma_ports(lines) == ["mlx5_0:1"]


def settings(devices, version):
    return {"ifname": "eth0", "cluster_networks": ["10.0.0.0/24"], "rdma_usable": True,
            "erdma_devices": devices, "nccl_version": version}


# NCCL_IB_GID_INDEX stays set at every version until a measurement on an eRDMA fabric says otherwise.
@pytest.mark.parametrize("version,gid", [("2.19.3", "1"), ("2.20.5", "1"), ("2.21.5", "1"), ("2.28.9", "1")])
def test_the_profile_uses_ib_on_exactly_the_erdma_devices(erdma_host, version, gid):
    env = profile_env(settings(erdma_devices(erdma_host), version))
    assert env["NCCL_IB_DISABLE"] == "0" and env["NCCL_IB_HCA"] == "=rocep0s5"
    assert env.get("NCCL_IB_GID_INDEX") == gid
    assert expected_transport(env) == "ib"


def test_nccl_before_2_19_or_unknown_is_refused_on_erdma(erdma_host):
    devices = erdma_devices(erdma_host)
    assert any("NCCL 2.18.3" in line and "2.19 or later" in line for line in env_problems(settings(devices, "2.18.3")))
    assert any("NCCL version is unknown" in line for line in env_problems(settings(devices, "")))


def test_tcp_only_hosts_keep_ib_disabled():
    env = profile_env({**settings([], "2.21.5"), "rdma_usable": False})
    assert env["NCCL_IB_DISABLE"] == "1" and "NCCL_IB_HCA" not in env
    assert expected_transport(env) == "any"
    assert expected_transport({"NCCL_NET": "AWS Libfabric"}) == "efa"


def test_a_run_that_used_sockets_where_erdma_was_set_up_fails():
    # Recorded on the H200: two simulated hosts over NET/Socket (a passing run, as far as numbers go).
    log = (SAMPLES / "h200-2host-socket-nccl-debug-info.txt").read_bytes()
    diagnosis = read_nccl_log(log, expected_transport="ib")
    run = {"name": "multi", "hosts": ["node1", "node2"], "rc": 0, "expected_transport": "ib",
           "perf": {"passed": True, "gates": [], "rows": [{}]}, "diagnosis": diagnosis}
    passed, reasons = run_verdict(run)
    assert not passed
    assert reasons[0].startswith("multi-node across node1, node2: NCCL did not use the expected transport (ib): "
                                 "NCCL uses Socket although InfiniBand was expected")
    diagnosis = read_nccl_log(log, expected_transport="any")
    ok, dummy = run_verdict({**run, "diagnosis": diagnosis, "expected_transport": "any"})
    assert ok
