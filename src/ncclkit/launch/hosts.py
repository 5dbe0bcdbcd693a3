"""The hosts a launch starts, in node-rank order, with how to reach each: read from the inventory's
`cluster` group as ansible-playbook reads it (group and host variables merged).

Per host: `ansible_host`, `ansible_port` (AutoDL's gateway gives every node the same address and a
port of its own), `ansible_user`, `ansible_ssh_private_key_file`, `ansible_ssh_common_args` and
`ansible_ssh_extra_args` (a jump host: `-o ProxyJump=...` or `-J ...`), `ansible_connection: local`
(the controller itself: several simulated hosts on one machine, each with its own `NCCL_HOSTID`
in `ncclkit_launch_env`), `ansible_python_interpreter` (the Python that runs launch's host side),
and launch's own `ncclkit_launch_torchrun`, `ncclkit_launch_args`, `ncclkit_launch_env` (docs/launch.md).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from ncclkit.inventory import InventoryError, load_inventory

LAUNCHER = "/opt/ncclkit/bin/ncclkit-torchrun"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SAFE_VALUE = re.compile(r"^[^\x00\n\r]*$")


@dataclass
class LaunchHost:
    name: str
    node_rank: int
    address: str
    connection: str = "ssh"            # "ssh" or "local"
    port: int | None = None
    user: str | None = None
    key: str | None = None
    ssh_args: list[str] = field(default_factory=list)
    python: str = "python3"
    launcher: str = LAUNCHER
    launcher_args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)

    def public(self) -> dict:
        """What launch.json keeps about the host (env values of secret-looking names masked there)."""
        return {"name": self.name, "node_rank": self.node_rank, "address": self.address, "connection": self.connection,
                "port": self.port, "user": self.user, "key": self.key, "ssh_args": self.ssh_args, "python": self.python,
                "launcher": self.launcher, "launcher_args": self.launcher_args, "env": dict(self.env)}

    @classmethod
    def from_public(cls, data: dict) -> LaunchHost:
        return cls(**{key: data[key] for key in cls.__dataclass_fields__ if key in data})


def launch_hosts(inventory: Path, limit: str | None = None) -> list[LaunchHost]:
    """The `cluster` group's hosts (those matching `limit`), or InventoryError naming the fix."""
    manager = load_inventory(inventory)
    group = manager.groups.get("cluster")
    names = [host.name for host in group.get_hosts()] if group else []
    if not names:
        raise InventoryError(f"inventory {inventory} has no hosts in the group 'cluster': list the nodes there")
    if limit:
        manager.subset(limit)
        allowed = {host.name for host in manager.get_hosts("cluster")}
        names = [name for name in names if name in allowed]
        if not names:
            raise InventoryError(f"--limit {limit!r} matches no host of the group 'cluster' in {inventory}")
    from ansible.vars.manager import VariableManager

    variables = VariableManager(loader=manager._loader, inventory=manager)
    return [host_settings(name, rank, variables.get_vars(host=manager.get_host(name), include_hostvars=False))
            for rank, name in enumerate(names)]


def host_settings(name: str, node_rank: int, hostvars: dict) -> LaunchHost:
    """One host's settings from its variables; InventoryError for a value launch cannot use."""
    def text(key: str, default=None):
        value = hostvars.get(key, default)
        if value is None:
            return None
        value = str(value)
        if "{{" in value or "{%" in value:
            raise InventoryError(f"{name}: {key} is a template ({value!r}): launch reads plain values; "
                                 "give the value itself in the inventory")
        return value

    connection = text("ansible_connection", "ssh")
    if connection not in ("ssh", "local", "smart", "paramiko"):
        raise InventoryError(f"{name}: ansible_connection {connection!r}: launch connects with ssh or local only")
    port = text("ansible_port") or text("ansible_ssh_port")
    if port is not None and not (port.isdigit() and 0 < int(port) < 65536):
        raise InventoryError(f"{name}: ansible_port {port!r} is not a port number (1-65535)")
    ssh_args = []
    for key in ("ansible_ssh_common_args", "ansible_ssh_extra_args"):
        value = text(key)
        if value:
            try:
                ssh_args += shlex.split(value)
            except ValueError as error:
                raise InventoryError(f"{name}: {key} does not parse ({error}): quote it as ssh's options") from None
    if ssh_args and not ssh_args[0].startswith("-"):
        raise InventoryError(f"{name}: ansible_ssh_common_args must be ssh options (starting with '-'), "
                             f"not {ssh_args[0]!r}")
    env = hostvars.get("ncclkit_launch_env") or {}
    if not isinstance(env, dict):
        raise InventoryError(f"{name}: ncclkit_launch_env must be a mapping NAME: value")
    for key, value in env.items():
        if not _NAME.match(str(key)) or not _SAFE_VALUE.match(str(value)):
            raise InventoryError(f"{name}: ncclkit_launch_env {key!r}: names are [A-Za-z_][A-Za-z0-9_]*, values "
                                 "one line without NUL")
    extra = hostvars.get("ncclkit_launch_args") or []
    if isinstance(extra, str):
        extra = shlex.split(extra)
    if not isinstance(extra, list):
        raise InventoryError(f"{name}: ncclkit_launch_args must be a list of launcher options")
    return LaunchHost(
        name=name, node_rank=node_rank, address=text("ansible_host") or name,
        connection="local" if connection == "local" else "ssh", port=int(port) if port else None,
        user=text("ansible_user") or text("ansible_ssh_user"),
        key=text("ansible_ssh_private_key_file") or text("ansible_private_key_file"), ssh_args=ssh_args,
        python=text("ansible_python_interpreter") or "python3", launcher=text("ncclkit_launch_torchrun") or LAUNCHER,
        launcher_args=[str(item) for item in extra], env={str(k): str(v) for k, v in env.items()})
