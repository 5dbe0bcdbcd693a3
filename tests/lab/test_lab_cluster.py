"""A 2-node lab with an outsider (lab index 90): what the nodes see, and what reaches what."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import pytest
from lab_helpers import ansible_ping, leftovers, ncclkit, needs_root, pong_hosts
from lab_indices import lab_index

from ncclkit.lab import Lab

pytestmark = [pytest.mark.lab, needs_root]

INDEX = lab_index(__file__)
PORT = 29590
LISTENER = f"""
import socket
server = socket.create_server(("0.0.0.0", {PORT}), reuse_port=True)
while True:
    server.accept()[0].close()
"""


@pytest.fixture(scope="module")
def inventory(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp(f"lab{INDEX}") / "hosts.yml"


@pytest.fixture(scope="module")
def lab(inventory):
    lab = Lab(INDEX)
    lab.down()   # whatever an interrupted earlier run left
    assert lab.up(nodes=2, outsider=True, inventory_path=inventory) is True
    yield lab
    lab.down()
    assert leftovers(INDEX, inventory) == []


def run_in(lab: Lab, node: str, script: str) -> subprocess.CompletedProcess:
    return lab.exec(node, ["sh", "-c", script], capture_output=True, text=True, timeout=30)


def tcp_connect(lab: Lab, node: str, ip: str, port: int, timeout: float = 2) -> bool:
    code = f"import socket; socket.create_connection(({ip!r}, {port}), timeout={timeout})"
    return lab.exec(node, ["python3", "-c", code], capture_output=True, timeout=30).returncode == 0


def ping(lab: Lab, node: str, ip: str) -> bool:
    return lab.exec(node, ["ping", "-c1", "-W1", ip], capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def listener_on_node2(lab):
    """A TCP listener on node2, all addresses, like a NCCL or Gloo rendezvous port."""
    process = subprocess.Popen(lab.command("node2", ["python3", "-c", LISTENER]))
    deadline = time.monotonic() + 10
    while not tcp_connect(lab, "node2", "127.0.0.1", PORT, timeout=0.5):
        assert process.poll() is None and time.monotonic() < deadline, "listener did not start"
        time.sleep(0.05)
    yield PORT
    process.kill()
    process.wait()


def test_up_reports_every_member(lab, inventory):
    status = lab.status()
    assert status["state"] == "up" and status["healthy"], status["problems"]
    assert [node["name"] for node in status["nodes"]] == ["node1", "node2"]
    assert [node["public_ip"] for node in status["nodes"]] == [f"198.18.{INDEX}.11", f"198.18.{INDEX}.12"]
    assert [node["private_ip"] for node in status["nodes"]] == [f"198.19.{INDEX}.11", f"198.19.{INDEX}.12"]
    assert status["outsider"]["private_ip"] == f"198.19.{INDEX}.250"
    assert status["outsider"]["public_ip"] is None
    assert all(node["running"] and node["ssh"] for node in status["nodes"])
    assert status["inventory"] == str(inventory) and status["inventory_exists"]
    assert [info.name for info in lab.nodes(include_outsider=True)] == ["node1", "node2",
                                                                        "outsider"]


def test_holder_pid_is_sshd_in_the_node_namespace(lab):
    for info in lab.nodes():
        assert Path(f"/proc/{info.pid}/exe").resolve() == Path("/usr/sbin/sshd").resolve()
        assert (Path(f"/proc/{info.pid}/ns/net").stat().st_ino
                == Path(f"/run/netns/{info.netns}").stat().st_ino)


def test_ssh_as_root_with_the_lab_key(lab):
    for info in lab.nodes():
        result = subprocess.run(lab.ssh_command(info.name, ["hostname"]), capture_output=True,
                                text=True, timeout=60, check=False)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == info.name


def test_hostname_inside_each_member(lab):
    for name in ("node1", "node2", "outsider"):
        assert run_in(lab, name, "hostname").stdout.strip() == name
        assert run_in(lab, name, "cat /etc/hostname").stdout.strip() == name
    assert socket.gethostname() not in ("node1", "node2", "outsider")


def test_node_name_resolves_to_eth0_like_on_clouds(lab):
    assert run_in(lab, "node1", "getent hosts node1").stdout.split()[0] == f"198.18.{INDEX}.11"
    assert run_in(lab, "node1", "getent hosts node2").stdout.split()[0] == f"198.18.{INDEX}.12"
    assert run_in(lab, "node2", "getent hosts node1").stdout.split()[0] == f"198.18.{INDEX}.11"


def test_interfaces_addresses_and_mtu(lab):
    assert "inet 198.18.90.11/32" in run_in(lab, "node1", "ip -o -4 addr show dev eth0").stdout
    assert "inet 198.19.90.11/24" in run_in(lab, "node1", "ip -o -4 addr show dev eth1").stdout
    assert run_in(lab, "node1", "ip route show default").stdout.startswith(
        "default via 198.18.90.1 dev eth0")
    assert run_in(lab, "node1", "cat /sys/class/net/eth1/mtu").stdout.strip() == "1500"


def test_node_to_node_over_eth0_is_dropped(lab, listener_on_node2):
    assert not ping(lab, "node1", f"198.18.{INDEX}.12")
    assert not tcp_connect(lab, "node1", f"198.18.{INDEX}.12", listener_on_node2, timeout=1)


def test_node_to_node_over_eth1_works(lab, listener_on_node2):
    assert ping(lab, "node1", f"198.19.{INDEX}.12")
    assert tcp_connect(lab, "node1", f"198.19.{INDEX}.12", listener_on_node2)
    assert tcp_connect(lab, "node1", f"198.19.{INDEX}.12", 22)


def test_outsider_reaches_the_private_side_only(lab, listener_on_node2):
    assert ping(lab, "outsider", f"198.19.{INDEX}.11")
    assert tcp_connect(lab, "outsider", f"198.19.{INDEX}.12", listener_on_node2)
    assert not tcp_connect(lab, "outsider", f"198.18.{INDEX}.12", listener_on_node2, timeout=1)


def test_controller_reaches_each_node_eth0(lab):
    for info in lab.nodes():
        assert subprocess.run(["ping", "-c1", "-W1", info.public_ip],
                              capture_output=True, check=False).returncode == 0
        socket.create_connection((info.public_ip, 22), timeout=2).close()


def test_host_has_no_private_address(lab):
    out = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True,
                         text=True, check=False).stdout
    assert f"198.19.{INDEX}." not in out
    assert f"198.18.{INDEX}.1/24" in out


@pytest.mark.parametrize("folder", ["/etc", "/opt", "/root", "/usr/local", "/var/lib", "/tmp"])
def test_files_written_on_node1_stay_on_node1(lab, folder):
    path = f"{folder}/ncclkit-lab-test-{INDEX}"
    assert run_in(lab, "node1", f"echo node1 > {path} && cat {path}").stdout == "node1\n"
    assert run_in(lab, "node2", f"test -e {path}").returncode == 1
    assert not Path(path).exists()
    assert run_in(lab, "node1", f"rm {path}").returncode == 0


def test_nodes_see_a_checkout_under_the_hosts_tmp(lab, tmp_path):
    """A checkout or virtualenv under /tmp (a CI clone, pytest's tmp_path) is visible in every node,
    as on a shared filesystem; what a node writes beside it stays its own."""
    shared = tmp_path / "checkout-file"
    shared.write_text("from the host\n")
    for node in ("node1", "node2"):
        assert run_in(lab, node, f"cat {shared}").stdout == "from the host\n"
    assert run_in(lab, "node1", f"echo node1 > {shared}").returncode == 0
    assert shared.read_text() == "from the host\n"
    assert run_in(lab, "node2", f"cat {shared}").stdout == "from the host\n"


def test_nodes_share_installed_packages(lab):
    assert run_in(lab, "node2", "command -v sshd python3 ip").returncode == 0
    assert run_in(lab, "node2", "dpkg-query -W openssh-server").returncode == 0


def test_exec_passes_the_exit_code_through(lab):
    assert lab.exec("node1", "exit 7").returncode == 7
    assert lab.exec("outsider", ["pwd"], capture_output=True, text=True).stdout == "/\n"
    assert ncclkit("lab", "exec", "node2", "--index", str(INDEX), "--", "sh", "-c",
                   "exit 5").returncode == 5
    result = ncclkit("lab", "exec", "node2", "--index", str(INDEX), "--", "hostname")
    assert (result.returncode, result.stdout) == (0, "node2\n")


def test_up_twice_is_harmless(lab, inventory):
    before = lab.nodes(include_outsider=True)
    assert lab.up(nodes=2, outsider=True, inventory_path=inventory) is False
    result = ncclkit("lab", "up", "--index", str(INDEX), "--nodes", "2", "--outsider",
                     "--inventory", str(inventory))
    assert result.returncode == 0 and "already up" in result.stdout, result.stderr
    assert lab.nodes(include_outsider=True) == before
    assert lab.status()["healthy"]


def test_other_settings_need_down_first(lab, inventory):
    with pytest.raises(Exception, match=f"down --index {INDEX}"):
        lab.up(nodes=3, outsider=True, inventory_path=inventory)
    result = ncclkit("lab", "up", "--index", str(INDEX), "--nodes", "2", "--mtu", "9000",
                     "--inventory", str(inventory))
    assert result.returncode == 1 and f"run `ncclkit lab down --index {INDEX}` first" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert lab.status()["healthy"]


def test_status_from_the_command_line(lab):
    result = ncclkit("lab", "status", "--index", str(INDEX))
    assert result.returncode == 0, result.stderr
    assert "lab 90: up, 2 nodes + outsider" in result.stdout
    assert f"198.19.{INDEX}.250" in result.stdout
    result = ncclkit("lab", "status", "--index", str(INDEX), "--json")
    assert '"healthy": true' in result.stdout


def test_inventory_is_what_ansible_needs(lab, inventory):
    import yaml

    text = inventory.read_text()
    assert text.startswith("# Generated by `ncclkit lab up`")
    data = yaml.safe_load(text)
    hosts = data["cluster"]["hosts"]
    assert list(hosts) == ["node1", "node2"]   # not the outsider
    assert hosts["node2"] == {"ansible_host": f"198.18.{INDEX}.12",
                              "ncclkit_lab_private_ip": f"198.19.{INDEX}.12"}
    group_vars = data["cluster"]["vars"]
    assert group_vars["ansible_user"] == "root"
    assert group_vars["ansible_ssh_private_key_file"] == str(lab.ssh_key)
    assert "StrictHostKeyChecking=yes" in group_vars["ansible_ssh_common_args"]
    assert f"UserKnownHostsFile={lab.known_hosts}" in group_vars["ansible_ssh_common_args"]
    assert group_vars["ansible_python_interpreter"] == "/usr/bin/python3"


def test_ansible_pings_every_node(lab, inventory):
    result = ansible_ping(inventory, "all")
    assert result.returncode == 0, result.stdout + result.stderr
    assert pong_hosts(result.stdout) == {"node1", "node2"}


def test_unknown_names_fail_fast_without_dns(lab):
    started = time.monotonic()
    assert run_in(lab, "node1", "getent hosts no-such-host.example").returncode == 2
    assert time.monotonic() - started < 5
