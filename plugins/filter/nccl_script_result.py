"""The ncclkit.cluster.nccl_script_result filter: the JSON object a script run through raw printed.

Documented in nccl_script_result.yml beside this file
(ansible-doc -t filter ncclkit.cluster.nccl_script_result).
"""

from __future__ import annotations

import json

from ansible.errors import AnsibleFilterError


def nccl_script_result(registered, what="the script"):
    """The last line of the registered raw result's stdout that is a JSON object. A terminal may
    add carriage returns, and stderr lines come first; a script that printed none is one error
    naming `what` and the end of its output (a failed start, a missing Python)."""
    registered = dict(registered or {})
    stdout = str(registered.get("stdout") or "")
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                break
            if isinstance(value, dict):
                return value
            break
    raise AnsibleFilterError(f"{what} printed no result (rc {registered.get('rc', '?')}): "
                             f"{(stdout + str(registered.get('stderr') or '')).strip()[-300:]!r}")


class FilterModule:
    def filters(self):
        return {"nccl_script_result": nccl_script_result}
