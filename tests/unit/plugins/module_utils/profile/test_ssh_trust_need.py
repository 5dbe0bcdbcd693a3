"""When nccl_profile skips the SSH trust: one host, or every host on `connection: local`."""

from ansible_collections.ncclkit.cluster.plugins.filter.profile import FilterModule
from ansible_collections.ncclkit.cluster.plugins.module_utils.profile.ssh_trust import ssh_trust_skip_reason


def test_one_host_needs_no_ssh_to_itself():
    reason = ssh_trust_skip_reason(["gpu1"], ["ssh"])
    assert "one host (gpu1)" in reason and "no SSH trust needed" in reason


def test_every_host_local_is_one_machine():
    assert "connection: local" in ssh_trust_skip_reason(["a", "b"], ["local", "ansible.builtin.local"])


def test_two_remote_hosts_need_trust():
    assert ssh_trust_skip_reason(["a", "b"], ["ssh", None]) == ""


def test_one_local_among_remote_hosts_still_needs_trust():
    assert ssh_trust_skip_reason(["a", "b"], ["local", "ssh"]) == ""


def test_filter_is_registered():
    skip = FilterModule().filters()["nccl_ssh_trust_skip_reason"]
    assert skip(["a"], ["local"]).startswith("one host")


def test_role_variables_skip_the_trust_for_one_local_host(tmp_path):
    """The role's own vars/main.yml, evaluated by Ansible for `connection: local` on one host."""
    import os
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[5]
    env = dict(os.environ, ANSIBLE_CONFIG=str(root / "ansible.cfg"))
    result = subprocess.run(
        ["ansible-playbook", "-i", "gpu1,", str(root / "tests/roles/nccl_profile/playbooks/ssh_skip_local.yml")],
        capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "wanted=False skip=one host (gpu1)" in result.stdout
