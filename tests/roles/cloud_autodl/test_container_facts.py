"""nccl_container's decisions on fake /proc and / trees, and the filters and plan that read them."""

from __future__ import annotations

import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.ncclkit.cluster.plugins.filter.host import (
    container_firewall,
    container_port_range,
    unreachable_hint,
)
from ansible_collections.ncclkit.cluster.plugins.module_utils.clouds.autodl.plan import autodl_plan
from ansible_collections.ncclkit.cluster.plugins.module_utils.host import container as cf

# CapEff of root in a Docker container with default capabilities (no CAP_NET_ADMIN), and of
# root on a host (all of them).
DOCKER_CAPEFF = "00000000a80425fb"
HOST_CAPEFF = "000001ffffffffff"


def fake_proc(tmp_path, pid1="sshd", capeff=HOST_CAPEFF, port_range="32768\t60999\n", writable=True):
    proc = tmp_path / "proc"
    (proc / "1").mkdir(parents=True)
    (proc / "1" / "comm").write_text(pid1 + "\n")
    (proc / "self").mkdir()
    (proc / "self" / "status").write_text(f"Name:\tpython3\nCapInh:\t0000000000000000\nCapEff:\t{capeff}\n")
    sysctl = proc / "sys" / "net" / "ipv4" / "ip_local_port_range"
    sysctl.parent.mkdir(parents=True)
    sysctl.write_text(port_range)
    sysctl.chmod(0o644 if writable else 0o444)
    return proc


def fake_root(tmp_path, init_target=None, run_systemd=False):
    root = tmp_path / "root"
    (root / "sbin").mkdir(parents=True)
    (root / "lib" / "systemd").mkdir(parents=True)
    if init_target:
        target = root / init_target
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("")
        os.symlink(target, root / "sbin" / "init")
    if run_systemd:
        (root / "run" / "systemd" / "system").mkdir(parents=True)
    return root


def facts(tmp_path, proc, root, gpus=0, turbo=None, data_dirs=()):
    turbo_path = tmp_path / "network_turbo"
    if turbo is not None:
        turbo_path.write_text(turbo)
    return cf.container_facts(gpu_count=gpus, proc_root=str(proc), root=str(root), shm_path=str(tmp_path),
                              data_dir_candidates=[str(path) for path in data_dirs],
                              network_turbo_path=str(turbo_path))


def test_a_vm_host_adapts_nothing(tmp_path):
    found = facts(tmp_path, fake_proc(tmp_path, pid1="systemd"), fake_root(tmp_path, run_systemd=True))
    assert found["systemd"] and found["net_admin"] and found["firewall_possible"]
    assert found["ip_local_port_range"] == [32768, 60999]
    assert found["in_container"] is False and found["adaptations"] == []


def test_an_autodl_like_container_is_recognised_point_by_point(tmp_path, monkeypatch):
    data_disk = tmp_path / "autodl-tmp"
    data_disk.mkdir()
    # Root opens a 0444 file for writing: only a read-only mount refuses it (the lab test has one).
    monkeypatch.setattr(cf, "proc_sys_writable", lambda proc_root: False)
    found = facts(tmp_path, fake_proc(tmp_path, capeff=DOCKER_CAPEFF, writable=False), fake_root(tmp_path),
                  data_dirs=[tmp_path / "missing", data_disk],
                  turbo="export http_proxy=http://172.20.0.113:12798 && export https_proxy=http://172.20.0.113:12798\n")
    assert found["pid1"] == "sshd" and not found["systemd"]
    assert not found["proc_sys_writable"] and not found["net_admin"]
    assert found["download_env"] == {"http_proxy": "http://172.20.0.113:12798",
                                     "https_proxy": "http://172.20.0.113:12798"}
    assert found["data_dir"] == str(data_disk) and found["in_container"]
    assert len(found["adaptations"]) == 5


def test_capabilities_are_read_bit_by_bit(tmp_path):
    assert not cf.has_net_admin(str(fake_proc(tmp_path, capeff=DOCKER_CAPEFF)))
    assert cf.has_net_admin(str(fake_proc(tmp_path / "b", capeff="0000000000001000")))
    assert not cf.has_net_admin(str(tmp_path / "nowhere"))   # unreadable: assume the worst


@pytest.mark.parametrize("target,booted,expected", [
    ("lib/systemd/systemd", False, True),     # a VM image: a unit written now runs at boot
    ("bin/busybox", False, False),
    (None, False, False),                     # no init at all (AutoDL's images)
    (None, True, True),                       # systemd runs now (sd_booted's test)
])
def test_systemd_units_only_where_systemd_boots(tmp_path, target, booted, expected):
    root = fake_root(tmp_path, init_target=target, run_systemd=booted)
    assert cf.boots_with_systemd("bash", str(root)) is expected
    assert cf.boots_with_systemd("systemd", str(root)) is True


def test_opening_the_sysctl_for_writing_changes_nothing(tmp_path):
    proc = fake_proc(tmp_path, port_range="1024 2048\n")
    assert cf.proc_sys_writable(str(proc)) is True
    assert (proc / "sys" / "net" / "ipv4" / "ip_local_port_range").read_text() == "1024 2048\n"
    assert cf.proc_sys_writable(str(tmp_path / "missing")) is False


def test_port_range_unreadable_or_odd_gives_nothing(tmp_path):
    assert cf.port_range(str(fake_proc(tmp_path, port_range="garbage"))) == []
    assert cf.port_range(str(tmp_path / "none")) == []


@pytest.mark.parametrize("gpus,needed_mib", [(0, 0), (1, 0), (2, 160), (8, 640)])
def test_shm_needs_grow_with_local_gpus(gpus, needed_mib):
    assert cf.shm_required_bytes(gpus) == needed_mib * cf.MIB


def test_a_64_mib_shm_fails_two_gpus_only(tmp_path):
    proc, root = fake_proc(tmp_path), fake_root(tmp_path)
    os.mkdir(tmp_path / "shm")
    small = {**facts(tmp_path, proc, root, gpus=2), "shm_bytes": 64 * cf.MIB}
    small["shm_ok"] = small["shm_bytes"] >= small["shm_required_bytes"]
    assert not small["shm_ok"]
    assert any("below the 160 MiB" in line for line in cf.adaptations(small))
    one = {**small, "gpu_count": 1, "shm_required_bytes": cf.shm_required_bytes(1)}
    assert not any("/dev/shm" in line for line in cf.adaptations(one))


@pytest.mark.parametrize("text,env,problem", [
    ("export http_proxy=http://10.0.0.1:3128 && export https_proxy=http://10.0.0.1:3128",
     {"http_proxy": "http://10.0.0.1:3128", "https_proxy": "http://10.0.0.1:3128"}, None),
    ("export no_proxy=localhost,127.0.0.1,.autodl.com\n", {"no_proxy": "localhost,127.0.0.1,.autodl.com"}, None),
    ("export http_proxy=http://user:secret@10.0.0.1:3128", {}, "carries credentials"),
    ("export http_proxy='$(rm -rf /)'", {}, "not an http(s) URL"),
    ("export PATH=/evil:$PATH; export LD_PRELOAD=/x.so", {}, None),   # only proxy names are taken
    ("export http_proxy='unterminated", {}, "shell words"),
])
def test_network_turbo_is_read_not_run(text, env, problem):
    found, problems = cf.parse_network_turbo(text)
    assert found == env
    assert (problem is None and problems == []) or any(problem in line for line in problems)


def test_port_range_follows_a_read_only_proc_sys():
    assert container_port_range([32768, 60999], {}) == [32768, 60999]
    assert container_port_range(["40000", "50000"], {"proc_sys_writable": True}) == [40000, 50000]
    assert container_port_range([32768, 60999], {"proc_sys_writable": False,
                                                 "ip_local_port_range": [20000, 30000]}) == [20000, 30000]
    with pytest.raises(AnsibleFilterError, match="unreadable"):
        container_port_range([32768, 60999], {"proc_sys_writable": False, "ip_local_port_range": []})


def test_no_firewall_without_net_admin_and_an_explicit_one_is_refused():
    assert container_firewall("auto", {}) == "auto"
    assert container_firewall("auto", {"firewall_possible": False}) == "none"
    assert container_firewall("nftables", {"firewall_possible": False}, "absent") == "nftables"
    with pytest.raises(AnsibleFilterError, match="no CAP_NET_ADMIN"):
        container_firewall("nftables", {"firewall_possible": False})


def test_autodl_plan_fails_or_falls_back_on_a_small_shm():
    small = {"shm_ok": False, "shm_bytes": 64 * cf.MIB, "shm_required_bytes": 160 * cf.MIB, "gpu_count": 2}
    failed = autodl_plan("node1", small, False, {"X": "1"}, "/root/autodl-tmp", False)
    assert failed["error"].startswith("node1: /dev/shm is 64 MiB, below the 160 MiB")
    assert "cloud_autodl_shm_fallback" in failed["error"]
    fallback = autodl_plan("node1", small, True, {"X": "1"}, "/root/autodl-tmp", True)
    assert fallback["error"] is None
    assert fallback["facts"] == {"ncclkit_cloud_nccl_env": {"X": "1", "NCCL_SHM_DISABLE": "1"},
                                 "ncclkit_report_parent": "/root/autodl-tmp/ncclkit-report"}
    fine = autodl_plan("node1", {"shm_ok": True}, False, None, "/root/autodl-tmp", False)
    assert fine == {"error": None, "messages": [], "facts": {"ncclkit_cloud_nccl_env": {}}}


def test_an_unreachable_autodl_host_names_the_console_field():
    hostvars = {"node2": {"ansible_host": "connect.westb.seetacloud.com", "ansible_port": 41022,
                          "ncclkit_cloud": "autodl"}, "node3": {}}
    lines = unreachable_hint(["node3", "node2"], hostvars)
    assert lines[0].startswith("node2 (connect.westb.seetacloud.com:41022) was not reached")
    assert "Login command" in lines[0] and "ansible_port" in lines[0]
    assert lines[1] == ("node3 (node3:22) was not reached and is left out: check the host's SSH "
                        "address and port in the inventory")
