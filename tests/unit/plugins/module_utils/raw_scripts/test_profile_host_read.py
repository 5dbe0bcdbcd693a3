"""nccl_profile's host read: the script run as the role runs it (python3 -c CODE JSON), the filter that
reads its output, and the host keys and kept tuning it feeds."""

import ast
import base64
import json
import subprocess
import sys

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.ncclkit.cluster.plugins.filter.autotune import nccl_autotune_kept
from ansible_collections.ncclkit.cluster.plugins.filter.profile import ssh_known_hosts
from ansible_collections.ncclkit.cluster.plugins.filter.common import nccl_script_result
from conftest import REPO_ROOT

CODE = (REPO_ROOT / "plugins" / "module_utils" / "raw_scripts" / "profile_host_read.py").read_text()
ED25519 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl root@node1\n"


def run_as_the_role_does(request):
    """The registered result of the raw task: rc, stdout, stderr."""
    done = subprocess.run([sys.executable, "-c", CODE, json.dumps(request)], capture_output=True, text=True,
                          check=False, timeout=30)
    return {"rc": done.returncode, "stdout": done.stdout, "stderr": done.stderr}


def test_it_reads_the_keys_the_user_the_hostname_and_the_kept_tuning(tmp_path):
    (tmp_path / "ssh_host_ed25519_key.pub").write_text(ED25519)
    (tmp_path / "ssh_host_ed25519_key").write_text("PRIVATE")  # never read: not the pattern
    (tmp_path / "autotune.json").write_text('{"version": 1}')
    result = nccl_script_result(run_as_the_role_does(
        {"user": "root", "key_dir": str(tmp_path), "key_pattern": "ssh_host_*_key.pub",
         "autotune": str(tmp_path / "autotune.json")}))
    assert result["host_keys"] == {str(tmp_path / "ssh_host_ed25519_key.pub"): ED25519}
    assert result["key_errors"] == [] and result["autotune"] == '{"version": 1}'
    assert result["user"]["name"] == "root" and result["user"]["uid"] == 0 and result["user"]["home"] == "/root"
    assert result["hostname"] == open("/proc/sys/kernel/hostname").read().strip()
    assert "PRIVATE" not in json.dumps(result)


def test_a_missing_user_and_tuning_are_none_and_an_oversized_key_is_an_error_that_stops_pinning(tmp_path):
    (tmp_path / "ssh_host_rsa_key.pub").write_bytes(b"x" * (64 * 1024 + 1))
    result = nccl_script_result(run_as_the_role_does(
        {"user": "no-such-user-ncclkit", "key_dir": str(tmp_path), "key_pattern": "ssh_host_*_key.pub",
         "autotune": str(tmp_path / "absent.json")}))
    assert result["user"] is None and result["autotune"] is None and result["host_keys"] == {}
    assert result["key_errors"] == [f"{tmp_path}/ssh_host_rsa_key.pub is over 65536 bytes: not read"]
    known = ssh_known_hosts(result["host_keys"], ["node1"], result["key_errors"])
    assert known == {"lines": [], "error": result["key_errors"][0]}


def test_the_keys_it_read_give_the_same_lines_as_slurped_ones():
    slurped = [{"source": "/etc/ssh/ssh_host_ed25519_key.pub", "content": base64.b64encode(ED25519.encode()).decode()}]
    read = {"/etc/ssh/ssh_host_ed25519_key.pub": ED25519}
    assert ssh_known_hosts(read, ["node1", "10.0.0.11"]) == ssh_known_hosts(slurped, ["node1", "10.0.0.11"])
    assert ssh_known_hosts(read, ["node1", "10.0.0.11"])["lines"][0].startswith("node1,10.0.0.11 ssh-ed25519 ")


def test_the_kept_tuning_reads_as_text_as_it_did_from_slurp():
    hardware = {"gpus": 1}
    assert nccl_autotune_kept(None, hardware) == nccl_autotune_kept({}, hardware)
    assert nccl_autotune_kept("not json", hardware) == nccl_autotune_kept(
        {"content": "bm90IGpzb24="}, hardware)  # base64 of "not json"


@pytest.mark.parametrize("stdout", ['{"a": 1}\n', 'warning: locale\r\n{"a": 1}\r\n'])
def test_the_filter_takes_the_last_json_line(stdout):
    assert nccl_script_result({"rc": 0, "stdout": stdout}) == {"a": 1}


def test_a_script_that_printed_nothing_is_one_error_naming_it():
    with pytest.raises(AnsibleFilterError) as error:
        nccl_script_result({"rc": 127, "stdout": "", "stderr": "sh: 1: python3: not found\n"}, "node2's host read")
    assert str(error.value) == "node2's host read printed no result (rc 127): 'sh: 1: python3: not found'"


def test_it_runs_on_the_oldest_python_the_hosts_may_have():
    # No f-strings or newer syntax: the hosts' Python may be older than the controller's.
    tree = ast.parse(CODE, feature_version=(3, 6))
    assert not [node for node in ast.walk(tree) if isinstance(node, ast.JoinedStr)]


def test_it_reads_the_users_cluster_key_and_finds_an_earlier_versions_block(tmp_path, monkeypatch):
    import pwd

    from ansible_collections.ncclkit.cluster.plugins.module_utils.raw_scripts import profile_host_read

    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh/ncclkit_cluster_ed25519.pub").write_text("ssh-ed25519 AAAA ncclkit-cluster@node1\n")
    entry = pwd.struct_passwd(("train", "x", 1000, 1000, "", str(home), "/bin/bash"))
    monkeypatch.setattr(profile_host_read.pwd, "getpwnam", lambda name: entry)
    known = tmp_path / "ssh_known_hosts"
    known.write_text("a key\n# BEGIN ncclkit cluster (nccl_profile)\nnode1 ssh-ed25519 AAAA\n"
                     "# END ncclkit cluster (nccl_profile)\n")
    request = {"user": "train", "key_dir": str(tmp_path), "key_pattern": "none", "autotune": "",
               "cluster_key_name": "ncclkit_cluster_ed25519", "legacy_known_hosts": str(known),
               "legacy_marker": "# BEGIN ncclkit cluster (nccl_profile)"}
    found = profile_host_read.read(request)
    assert found["cluster_key"] == "ssh-ed25519 AAAA ncclkit-cluster@node1\n" and found["legacy_block"] is True
    known.write_text("a key\n")
    (home / ".ssh/ncclkit_cluster_ed25519.pub").unlink()
    found = profile_host_read.read(request)
    assert found["cluster_key"] is None and found["legacy_block"] is False and found["key_errors"] == []
