# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Filters over module_utils/common: safe names, secret names, a raw script's result, tri-state settings."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

# The module_utils are imported inside the filters, not here: Ansible imports every filter file of
# the collection in each worker that calls any of them (about 0.09 s CPU a worker, docs/benchmarks.md).


def safe_name(value, kind, variable):
    """`value` unchanged when it passes the `kind` rule (see common.safe_names.CHECKS), else an error line."""
    from ansible_collections.ncclkit.cluster.plugins.module_utils.common import safe_names
    try:
        safe_names.CHECKS[kind](value, variable)
    except safe_names.UnsafeName as error:
        raise AnsibleFilterError(str(error)) from None
    return value


def safe_name_problems(values, kind, variable):
    """One message per value of the list that fails the `kind` rule; [] when all pass."""
    from ansible_collections.ncclkit.cluster.plugins.module_utils.common import safe_names
    found = []
    for value in [values] if isinstance(values, str) or values is None else values:
        try:
            safe_names.CHECKS[kind](value, variable)
        except safe_names.UnsafeName as error:
            found.append(str(error))
    return found


def nccl_script_result(registered, what="the script"):
    """The last JSON object line of the registered raw result's stdout; a script that printed none
    is one error naming `what`, its exit code and the end of its output (a failed start, a missing
    Python)."""
    from ansible_collections.ncclkit.cluster.plugins.module_utils.common.script_result import last_json_object
    registered = dict(registered or {})
    value = last_json_object(registered.get("stdout"))
    if value is None:
        output = (str(registered.get("stdout") or "") + str(registered.get("stderr") or "")).strip()
        raise AnsibleFilterError(f"{what} printed no result (rc {registered.get('rc', '?')}): {output[-300:]!r}")
    return value


def nccl_env_secret_names(env):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.common.secret_names import secret_names
    return secret_names(env or {})


def nccl_env_file_mode(names, readable="0644", private="0600"):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.common.secret_names import env_file_mode
    return env_file_mode(names or [], readable, private)


def tristate(value, variable):
    """`auto`, `on` or `off` for a tri-state setting; an error naming `variable` for any other word."""
    from ansible_collections.ncclkit.cluster.plugins.module_utils.common.tristate import TristateError
    from ansible_collections.ncclkit.cluster.plugins.module_utils.common.tristate import tristate as normalise
    try:
        return normalise(value, variable)
    except TristateError as error:
        raise AnsibleFilterError(str(error)) from None


class FilterModule:
    def filters(self):
        return {
            "safe_name": safe_name,
            "safe_name_problems": safe_name_problems,
            "nccl_script_result": nccl_script_result,
            "nccl_env_secret_names": nccl_env_secret_names,
            "nccl_env_file_mode": nccl_env_file_mode,
            "tristate": tristate,
        }
