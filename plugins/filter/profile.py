# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Filters over module_utils/profile: the environment, the launch plan, the hostfile, SSH trust."""

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


def nccl_profile_container_env(env):
    """{"env": the profile for a container on this host, "notes": what was changed or left out}."""
    from ansible_collections.ncclkit.cluster.plugins.module_utils.profile.container import container_env
    kept, notes = container_env(dict(env or {}))
    return {"env": kept, "notes": notes}


def nccl_profile_env_problems(settings):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.profile.env import env_problems
    return env_problems(dict(settings))


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


def nccl_env_uniform_names(envs):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.profile.launch import uniform_names
    return uniform_names(list(envs))


def expected_transport(env):
    """What nccl_diagnose should expect between hosts from a profile's environment: efa, ib or any."""
    from ansible_collections.ncclkit.cluster.plugins.module_utils.profile.transport import expected_transport as transport
    return transport(env)


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


def nccl_ssh_trust_skip_reason(hosts, connections):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.profile.ssh_trust import ssh_trust_skip_reason
    return ssh_trust_skip_reason(hosts, connections)


class FilterModule:
    def filters(self):
        return {
            "nccl_profile_env": nccl_profile_env,
            "nccl_profile_env_problems": nccl_profile_env_problems,
            "nccl_profile_container_env": nccl_profile_container_env,
            "nccl_launch_plan": nccl_launch_plan,
            "nccl_launch_problems": nccl_launch_problems,
            "nccl_hostfile_lines": nccl_hostfile_lines,
            "nccl_env_uniform_names": nccl_env_uniform_names,
            "nccl_expected_transport": expected_transport,
            "nccl_ssh_known_hosts": ssh_known_hosts,
            "nccl_ssh_known_hosts_errors": ssh_known_hosts_errors,
            "nccl_ssh_trust_skip_reason": nccl_ssh_trust_skip_reason,
        }
