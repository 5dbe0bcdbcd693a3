"""The headline path on AutoDL-like containers: `ncclkit lab up --profile autodl` (lab 120), then
site.yml through the one SSH gateway, twice; the /dev/shm check; an unreachable instance."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys

import pytest
import yaml
from lab_indices import lab_index
from lab_playbook import lab_cluster, play

from conftest import REPO_ROOT
from ncclkit.lab import Lab
from ncclkit.lab.plan import GATEWAY_FIRST_PORT

pytestmark = pytest.mark.lab
INDEX = lab_index(__file__)
GATEWAY = f"198.18.{INDEX}.2"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    yield from lab_cluster(INDEX, tmp_path_factory.mktemp(f"lab{INDEX}"), nodes=2, profile="autodl")


def through_gateway(lab: Lab, port: int, script: str) -> subprocess.CompletedProcess:
    """ssh as the controller does: to the gateway's address, on the instance's port."""
    state = lab.state_dir
    argv = ["ssh", "-F", "/dev/null", "-i", str(state.ssh_key), "-o", "IdentitiesOnly=yes",
            "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-o", f"UserKnownHostsFile={state.known_hosts}",
            "-o", "StrictHostKeyChecking=yes", "-p", str(port), f"root@{GATEWAY}", script]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def test_the_inventory_names_one_gateway_and_a_port_per_instance(lab):
    hosts = yaml.safe_load(lab.inventory_path.read_text())["cluster"]["hosts"]
    assert {host["ansible_host"] for host in hosts.values()} == {GATEWAY}
    assert [hosts[name]["ansible_port"] for name in ("node1", "node2")] == [GATEWAY_FIRST_PORT + 1,
                                                                            GATEWAY_FIRST_PORT + 2]


@pytest.mark.parametrize("node", ["node1", "node2"])
def test_each_instance_behaves_like_an_autodl_container(lab, node):
    port = GATEWAY_FIRST_PORT + int(node[-1])
    probe = ("hostname; cat /proc/1/comm; grep CapEff /proc/self/status; "
             "stat -f -c %b:%S /dev/shm; test -e /sbin/init && echo init || echo no-init; "
             "echo 1 > /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null && echo rw || echo ro; "
             "test -d /root/autodl-tmp && echo data-disk; echo $SSH_CONNECTION")
    done = through_gateway(lab, port, probe)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split("\n")
    assert lines[0] == node and lines[1] == "sshd"                 # PID 1 is not systemd
    assert not int(lines[2].split()[1], 16) >> 12 & 1              # no CAP_NET_ADMIN
    blocks, size = map(int, lines[3].split(":"))
    assert blocks * size == 64 * 1024 * 1024
    assert lines[4:7] == ["no-init", "ro", "data-disk"]
    assert lines[7].split()[0] == GATEWAY and lines[7].split()[3] == "22"   # NATed by the gateway


def test_site_yml_passes_twice_adapting_to_the_containers(lab, tmp_path):
    report_parent = tmp_path / "reports"
    extra = {"nccl_validate_report_parent": str(report_parent)}
    first = play(lab.inventory_path, "site.yml", extra)
    assert first.rc == 0, first.stdout[-4000:]
    second = play(lab.inventory_path, "site.yml", extra)
    assert second.rc == 0, second.stdout[-4000:]
    assert set(second.recap) == {"node1", "node2"}
    assert all(host["changed"] == 0 and host["failed"] == 0 for host in second.recap.values()), second.recap
    print(f"\nsite.yml on 2 AutoDL-like nodes: first run {first.seconds:.1f} s "
          f"(changed {[c['changed'] for c in first.recap.values()]}), second {second.seconds:.1f} s, changed=0")
    for line in ("adapted: /proc/sys is read-only: ip_local_port_range is not pinned",
                 "adapted: no CAP_NET_ADMIN: no host firewall is possible here",
                 "adapted: PID 1 is sshd, not systemd"):
        assert second.stdout.count(line) == 2, line
    reports = sorted(report_parent.iterdir())
    report = json.loads((reports[-1] / "report.json").read_text())
    assert all(len(report["adaptations"][node]) == 4 for node in ("node1", "node2"))
    assert {facts["firewall"] for facts in report["network"].values()} == {"none"}
    assert {tuple(facts["port_range"]) for facts in report["network"].values()} == {(32768, 60999)}
    assert "## Adapted to the hosts" in (reports[-1] / "report.md").read_text()
    # Nothing the container cannot keep was written: no sysctl file, no boot unit.
    left = through_gateway(lab, GATEWAY_FIRST_PORT + 1,
                           "ls /etc/sysctl.d/*ncclkit* /etc/systemd/system/ncclkit-firewall.service 2>&1; "
                           "ls -d /root/autodl-tmp/ncclkit 2>&1; cat /etc/nccl.conf")
    assert "No such file" in left.stdout and "ncclkit-firewall.service" not in left.stdout.replace(
        "cannot access '/etc/systemd/system/ncclkit-firewall.service'", "")
    assert "NCCL_SOCKET_IFNAME=" in left.stdout


def test_the_shm_check_fires_for_two_gpus_in_64_mib(lab):
    fake = REPO_ROOT / "tests" / "roles" / "nccl_tests" / "fakes.py"
    write = (f"{shlex.quote(sys.executable)} -c 'import sys; sys.path.insert(0, \"{fake.parent}\"); "
             "import fakes, pathlib; "
             "fakes.make_fake_nvidia_smi(pathlib.Path(\"/root/fake-nvidia-smi\"), [\"8.0\", \"8.0\"])'")
    made = lab.exec("node1", ["sh", "-c", write], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    extra = {"nccl_preflight_nvidia_smi": "/root/fake-nvidia-smi"}
    failed = play(lab.inventory_path, "tests/roles/cloud_autodl/playbook.yml", extra)
    assert failed.rc != 0
    assert "node1: /dev/shm is 64 MiB, below the 160 MiB NCCL's shared-memory transport needs for 2 GPUs" \
        in failed.flat()
    assert failed.recap["node2"]["failed"] == 0   # one GPU-less node passes the check
    fallback = play(lab.inventory_path, "tests/roles/cloud_autodl/playbook.yml",
                    {**extra, "cloud_autodl_shm_fallback": True})
    assert fallback.rc == 0, fallback.stdout[-3000:]
    printed = fallback.stdout.replace("\\", "")   # as YAML or JSON, with or without escapes
    assert 'NCCLKIT_CLOUD_ENV node1 {"NCCL_SHM_DISABLE": "1"}' in printed
    assert "NCCLKIT_CLOUD_ENV node2 {}" in printed


def test_a_wrong_port_names_the_instance_and_the_console_field(lab, tmp_path):
    inventory = yaml.safe_load(lab.inventory_path.read_text())
    inventory["cluster"]["hosts"]["node2"]["ansible_port"] = GATEWAY_FIRST_PORT + 99
    wrong = tmp_path / "hosts.yml"
    wrong.write_text(yaml.safe_dump(inventory))
    done = play(wrong, "tests/roles/cloud_autodl/playbook.yml")
    assert done.recap["node2"]["unreachable"] == 1
    assert done.recap["node1"]["failed"] == 0 and done.recap["node1"]["unreachable"] == 0
    assert f"node2 ({GATEWAY}:{GATEWAY_FIRST_PORT + 99}) was not reached and is left out: check the " \
           "instance's SSH login command in the AutoDL console" in done.flat()
