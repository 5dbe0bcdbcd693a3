"""Filters of the nccl_profile role: the environment, the launch plan, the hostfile, RDMA ports.

The logic lives in plugins/module_utils (nccl_env, profile.launch, host.rdma); these only
turn its errors into Ansible's.
"""

from __future__ import annotations

import base64

from ansible.errors import AnsibleFilterError
# The module_utils are imported inside the filters, not here: Ansible imports every filter file of
# the collection in each worker that calls any of them (about 0.09 s CPU a worker, docs/benchmarks.md).


def nccl_profile_env(settings):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.profile.env import NcclEnvError, profile_env
    try:
        return profile_env(dict(settings))
    except NcclEnvError as error:
        raise AnsibleFilterError(str(error)) from error


def nccl_launch_plan(host, hosts, addresses, slots, master_port):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.profile.launch import LaunchError, launch_plan
    try:
        return launch_plan(host, list(hosts), dict(addresses), dict(slots), master_port)
    except LaunchError as error:
        raise AnsibleFilterError(str(error)) from error


def nccl_launch_problems(hosts, addresses, slots, master_port):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.profile.launch import plan_problems
    return plan_problems(list(hosts), dict(addresses), dict(slots), master_port)


def nccl_hostfile_lines(hosts, addresses, slots):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.profile.launch import LaunchError, hostfile_lines
    try:
        return hostfile_lines(list(hosts), dict(addresses), dict(slots))
    except LaunchError as error:
        raise AnsibleFilterError(str(error)) from error


def expected_transport(env):
    """What nccl_diagnose should expect between hosts from a profile's environment: efa where the
    aws-ofi-nccl plugin is pinned, ib where NCCL's IB transport is on (IB, RoCE, eRDMA), else any."""
    env = env or {}
    net = str(env.get("NCCL_NET", ""))
    from ansible_collections.ncclkit.cluster.plugins.module_utils.profile.env import is_libfabric_net
    if is_libfabric_net(net):
        return "efa"
    if str(env.get("NCCL_IB_DISABLE", "1")) == "0" and net.upper() in ("", "IB"):
        return "ib"
    return "any"


def ssh_known_hosts(keys, names, errors=()):
    """{lines, error} from the host's public host key files - {path: text}, or slurp results - and
    its names; `errors` (files that could not be read) make it an error."""
    from ansible_collections.ncclkit.cluster.plugins.module_utils.profile.ssh_host_keys import known_hosts_result
    if errors:
        return {"lines": [], "error": "; ".join(str(error) for error in errors)}
    if isinstance(keys, dict):
        return known_hosts_result({str(path): str(text) for path, text in keys.items()}, list(names))
    texts = {}
    for result in keys or []:
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


def nccl_profile_env_problems(settings):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.profile.env import env_problems
    return env_problems(dict(settings))


def nccl_env_uniform_names(envs):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.profile.launch import uniform_names
    return uniform_names(list(envs))


def rdma_usable_ports(lines):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.host.rdma import usable_rdma_ports
    return usable_rdma_ports(lines)


def rdma_erdma_devices(lines):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.host.rdma import erdma_devices
    return erdma_devices(lines)


def rdma_transport_of(lines):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.host.rdma import rdma_transport
    return rdma_transport(lines)


def nccl_env_secret_names(env):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.common.secret_names import secret_names
    return secret_names(env or {})


def nccl_env_file_mode(names, readable="0644", private="0600"):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.common.secret_names import env_file_mode
    return env_file_mode(names or [], readable, private)


def nccl_ssh_trust_skip_reason(hosts, connections):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.profile.ssh_trust import ssh_trust_skip_reason
    return ssh_trust_skip_reason(hosts, connections)


def rdma_disagreement_of(ports_by_host):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.host.rdma import rdma_disagreement
    return rdma_disagreement(dict(ports_by_host))


class FilterModule:
    def filters(self):
        return {
            "nccl_profile_env": nccl_profile_env,
            "nccl_profile_env_problems": nccl_profile_env_problems,
            "nccl_launch_plan": nccl_launch_plan,
            "nccl_launch_problems": nccl_launch_problems,
            "nccl_hostfile_lines": nccl_hostfile_lines,
            "nccl_env_uniform_names": nccl_env_uniform_names,
            "rdma_usable_ports": rdma_usable_ports,
            "rdma_erdma_devices": rdma_erdma_devices,
            "rdma_transport": rdma_transport_of,
            "nccl_expected_transport": expected_transport,
            "nccl_ssh_known_hosts": ssh_known_hosts,
            "nccl_ssh_known_hosts_errors": ssh_known_hosts_errors,
            "nccl_env_secret_names": nccl_env_secret_names,
            "nccl_env_file_mode": nccl_env_file_mode,
            "nccl_ssh_trust_skip_reason": nccl_ssh_trust_skip_reason,
            "rdma_disagreement": rdma_disagreement_of,
        }
