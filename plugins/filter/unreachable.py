"""Filter: one line per host the play could not reach, naming where its address comes from."""

from __future__ import annotations

# Where a user reads a host's SSH address and port, by the inventory's ncclkit_cloud.
CONSOLE_FIELDS = {
    "autodl": ("the instance's SSH login command in the AutoDL console (Container Instances -> "
               "Login command: ssh -p PORT root@connect.<region>.seetacloud.com): PORT is "
               "ansible_port, the host name is ansible_host; a stopped or restarted instance gets "
               "a new port"),
    "aws": "the instance's private DNS name or IP in the EC2 console, and that it is running",
    "alibaba": "the instance's IP in the ECS console, and that it is running",
}
DEFAULT_FIELD = "the host's SSH address and port in the inventory"


def unreachable_hint(hosts, hostvars):
    """['node2 (connect.westb.seetacloud.com:41022) was not reached: check ...', ...]"""
    lines = []
    for host in sorted(hosts):
        variables = hostvars.get(host) or {}
        address = variables.get("ansible_host") or host
        port = variables.get("ansible_port") or 22
        field = CONSOLE_FIELDS.get(str(variables.get("ncclkit_cloud") or ""), DEFAULT_FIELD)
        lines.append(f"{host} ({address}:{port}) was not reached and is left out: check {field}")
    return lines


class FilterModule:
    def filters(self):
        return {"unreachable_hint": unreachable_hint}
