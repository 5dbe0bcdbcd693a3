"""Filters of the nccl_profile role: the environment, the launch plan, the hostfile, RDMA ports.

The logic lives in plugins/module_utils (nccl_env, nccl_launch, rdma_devices); these only
turn its errors into Ansible's.
"""

from __future__ import annotations

import base64

from ansible.errors import AnsibleFilterError
from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_env import (
    NcclEnvError,
    env_problems,
    profile_env,
)
from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_launch import (
    LaunchError,
    hostfile_lines,
    launch_plan,
    plan_problems,
    uniform_names,
)
from ansible_collections.ncclkit.cluster.plugins.module_utils.rdma_devices import (
    erdma_devices,
    rdma_disagreement,
    rdma_transport,
    usable_rdma_ports,
)
from ansible_collections.ncclkit.cluster.plugins.module_utils.secret_names import env_file_mode, secret_names
from ansible_collections.ncclkit.cluster.plugins.module_utils.ssh_host_keys import known_hosts_result
from ansible_collections.ncclkit.cluster.plugins.module_utils.ssh_trust_need import ssh_trust_skip_reason


def nccl_profile_env(settings):
    try:
        return profile_env(dict(settings))
    except NcclEnvError as error:
        raise AnsibleFilterError(str(error)) from error


def nccl_launch_plan(host, hosts, addresses, slots, master_port):
    try:
        return launch_plan(host, list(hosts), dict(addresses), dict(slots), master_port)
    except LaunchError as error:
        raise AnsibleFilterError(str(error)) from error


def nccl_launch_problems(hosts, addresses, slots, master_port):
    return plan_problems(list(hosts), dict(addresses), dict(slots), master_port)


def nccl_hostfile_lines(hosts, addresses, slots):
    try:
        return hostfile_lines(list(hosts), dict(addresses), dict(slots))
    except LaunchError as error:
        raise AnsibleFilterError(str(error)) from error


def expected_transport(env):
    """What nccl_diagnose should expect between hosts from a profile's environment: efa where the
    aws-ofi-nccl plugin is pinned, ib where NCCL's IB transport is on (IB, RoCE, eRDMA), else any."""
    env = env or {}
    net = str(env.get("NCCL_NET", ""))
    if net in ("Libfabric", "AWS Libfabric", "OFI"):
        return "efa"
    if str(env.get("NCCL_IB_DISABLE", "1")) == "0" and net in ("", "IB"):
        return "ib"
    return "any"


def ssh_known_hosts(slurped, names):
    """{lines, error} from slurp results of public host key files and the host's names."""
    texts = {}
    for result in slurped or []:
        source = result.get("source") or result.get("item") or "?"
        try:
            texts[source] = base64.b64decode(result.get("content") or "").decode("utf-8", "replace")
        except (ValueError, TypeError):
            texts[source] = ""
    return known_hosts_result(texts, list(names))


def ssh_known_hosts_errors(known_by_host):
    """['host: error', ...] from each host's nccl_ssh_known_hosts result (a host without one: none)."""
    return ["{0}: {1}".format(host, (known or {}).get("error")) for host, known in sorted((known_by_host or {}).items())
            if (known or {}).get("error")]


class FilterModule:
    def filters(self):
        return {
            "nccl_profile_env": nccl_profile_env,
            "nccl_profile_env_problems": lambda settings: env_problems(dict(settings)),
            "nccl_launch_plan": nccl_launch_plan,
            "nccl_launch_problems": nccl_launch_problems,
            "nccl_hostfile_lines": nccl_hostfile_lines,
            "nccl_env_uniform_names": lambda envs: uniform_names(list(envs)),
            "rdma_usable_ports": usable_rdma_ports,
            "rdma_erdma_devices": erdma_devices,
            "rdma_transport": rdma_transport,
            "nccl_expected_transport": expected_transport,
            "nccl_ssh_known_hosts": ssh_known_hosts,
            "nccl_ssh_known_hosts_errors": ssh_known_hosts_errors,
            "nccl_env_secret_names": lambda env: secret_names(env or {}),
            "nccl_env_file_mode": lambda names, readable="0644", private="0600": env_file_mode(
                names or [], readable, private),
            "nccl_ssh_trust_skip_reason": ssh_trust_skip_reason,
            "rdma_disagreement": lambda ports_by_host: rdma_disagreement(dict(ports_by_host)),
        }
