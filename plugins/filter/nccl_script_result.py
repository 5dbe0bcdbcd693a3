"""The ncclkit.cluster.nccl_script_result filter: the JSON object a script run through raw printed.

Documented in nccl_script_result.yml beside this file
(ansible-doc -t filter ncclkit.cluster.nccl_script_result).
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
# The module_utils are imported inside the filter, not here: Ansible imports every filter file of
# the collection in each worker that calls any of them.


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


class FilterModule:
    def filters(self):
        return {"nccl_script_result": nccl_script_result}
