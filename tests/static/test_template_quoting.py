"""The launcher, profile and build templates as Ansible renders them (one local playbook run):
a host name that a shell would read as commands is refused naming it, and values from the host's
facts (a library path, a version) reach the scripts quoted."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from lab_playbook import play

REPO_ROOT = Path(__file__).resolve().parents[2]
PROFILE = ["ncclkit-torchrun.j2", "ncclkit-mpirun.j2", "ncclkit-env.j2", "ncclkit.sh.j2", "nccl.env.j2",
           "nccl.container.env.j2", "nccl.conf.j2"]
PLUGIN = "/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu/libnccl-net-ofi.so"
HOSTILE_NAME = "evil$(touch PWNED)"
HOSTILE_PATH = "/opt/nccl $(touch PWNED)/lib/libnccl.so.2"
COMMON = {
    "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
    "ncclkit_launch": {"python": "/nonexistent/python3", "env": "/opt/ncclkit/bin/ncclkit-env", "nnodes": 2,
                       "node_rank": 0, "master_addr": "10.0.0.11", "master_port": 29500, "nproc_per_node": 8,
                       "world_size": 16},
    "_nccl_profile_paths": {"hostfile": "/etc/ncclkit/hostfile", "ssh_config": "/etc/ncclkit/ssh_config",
                            "env_runner": "/opt/ncclkit/bin/ncclkit-env", "nccl_conf": "/etc/nccl.conf"},
    "_nccl_profile_mpi_home": "", "nccl_profile_ssh_trust": True, "_nccl_profile_forwarded": ["NCCL_DEBUG"],
    "ncclkit_nccl_env": {"NCCL_DEBUG": "WARN", "NCCL_SOCKET_IFNAME": "=eth1", "NCCL_NET_PLUGIN": PLUGIN},
    "_nccl_profile_owner": "Written by ncclkit.cluster.nccl_profile",
    "nccl_tests_version": "v2.19.6", "_nccl_tests_key": "git-v2.19.6-abc", "nccl_tests_install_dir": "/opt/nccl-tests",
    "ncclkit_nccl": {"include_dir": "/opt/nccl/include", "library": HOSTILE_PATH, "version": "2.28.9"},
    "_nccl_tests_mpi": False, "nccl_tests_rpath": False, "nccl_tests_jobs": 0, "_nccl_tests_src_root": "/opt/src",
    "_nccl_tests_make_args": ["NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90"],
    "_nccl_tests_stamp": {"binaries": ["all_reduce_perf"]}, "_nccl_tests_stamp_name": "ncclkit-stamp.json",
    "_nccl_tests_tmp": "/opt/nccl-tests/.build-git-v2.19.6-abc",
}
PLAYBOOK = """
- hosts: all
  gather_facts: false
  tasks:
    - name: Render
      ansible.builtin.copy:
        content: "{{ lookup('ansible.builtin.template', item.src) }}"
        dest: "{{ out }}/{{ inventory_hostname | hash('sha1') }}-{{ item.src | basename }}"
        mode: "0600"
      loop: "{{ templates }}"
      ignore_errors: true
"""


def output_prefix(work: Path, host: str) -> Path:
    """Where the playbook put a host's rendered files (named by the host name's sha1)."""
    return work / hashlib.sha1(host.encode()).hexdigest()


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    work = tmp_path_factory.mktemp("templates")
    (work / "play.yml").write_text(PLAYBOOK)
    (work / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": {"node-1": {}, HOSTILE_NAME: {}},
                                                            "vars": COMMON}}))
    templates = [{"src": str(REPO_ROOT / "roles/nccl_profile/templates" / name)} for name in PROFILE]
    templates.append({"src": str(REPO_ROOT / "roles/nccl_tests/templates/build.sh.j2")})
    done = play(work / "hosts.yml", str(work / "play.yml"), {"out": str(work), "templates": templates},
                env={"ANSIBLE_LOCALHOST_WARNING": "0", "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0"}, cwd=work,
                timeout=120, structured=True)
    results = done.task("Render")
    return work, {host: {Path(item["item"]["src"]).name: item for item in result["results"]}
                  for host, result in results.items()}


def test_a_host_name_with_shell_characters_is_refused_naming_it(rendered):
    work, results = rendered
    for name in PROFILE:
        item = results[HOSTILE_NAME][name]
        assert item.get("failed"), name
        assert f"inventory_hostname is {HOSTILE_NAME!r}: a host name is" in item["msg"], name
    assert not (work / "PWNED").exists()


def test_good_names_render_scripts_the_shell_reads_as_meant(rendered):
    work, results = rendered
    assert not any(item.get("failed") for item in results["node-1"].values()), results["node-1"]
    prefix = output_prefix(work, "node-1")
    torchrun = Path(f"{prefix}-ncclkit-torchrun.j2").read_text()
    assert "--master-addr 10.0.0.11 --master-port 29500" in torchrun
    done = subprocess.run(["sh", Path(f"{prefix}-ncclkit-torchrun.j2")], capture_output=True, text=True, cwd=work,
                          check=False)
    assert done.returncode == 127 and "/nonexistent/python3 not found on node-1:" in done.stderr
    for name in ("ncclkit-mpirun.j2", "ncclkit-env.j2", "build.sh.j2"):
        check = subprocess.run(["bash", "-n", Path(f"{prefix}-{name}")], capture_output=True, text=True, check=False)
        assert check.returncode == 0, (name, check.stderr)


def test_a_library_path_from_the_facts_stays_one_word(rendered):
    work, dummy = rendered
    build = Path(f"{output_prefix(work, 'node-1')}-build.sh.j2").read_text()
    lines = [line for line in build.splitlines() if HOSTILE_PATH.split()[0] in line or "PWNED" in line]
    assert lines, build
    for line in lines:
        subprocess.run(["bash", "-c", line], cwd=work, capture_output=True, timeout=10, check=False)
    assert not (work / "PWNED").exists(), lines


def test_the_container_env_file_holds_no_path_of_the_host(rendered):
    work, dummy = rendered
    host = Path(f"{output_prefix(work, 'node-1')}-nccl.env.j2").read_text()
    container = Path(f"{output_prefix(work, 'node-1')}-nccl.container.env.j2").read_text()
    assert f"NCCL_NET_PLUGIN={PLUGIN}" in host.splitlines()
    values = dict(line.split("=", 1) for line in container.splitlines() if line and not line.startswith("#"))
    assert values == {"NCCL_DEBUG": "WARN", "NCCL_SOCKET_IFNAME": "=eth1", "NCCL_NET_PLUGIN": "ofi"}
    assert f"#   NCCL_NET_PLUGIN: ofi instead of the host's path {PLUGIN}" in container
