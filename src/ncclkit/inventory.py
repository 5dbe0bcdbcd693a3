"""Reading an inventory the way ansible-playbook will, before a play starts: a missing or broken
inventory is the caller's bad input (one line, exit code 3), not a play that matches no host."""

from __future__ import annotations

import os
from pathlib import Path


class InventoryError(ValueError):
    """The inventory is missing, empty or does not parse; the message names it and the fix."""


def load_inventory(inventory: Path):
    """ansible-core's InventoryManager for `inventory`, or InventoryError."""
    if not inventory.exists():
        raise InventoryError(f"inventory {inventory} does not exist (for the lab: run 'ncclkit lab up' first)")
    # An inventory no plugin can parse is an error here, not the warning ansible-playbook prints.
    os.environ.setdefault("ANSIBLE_INVENTORY_UNPARSED_FAILED", "true")
    from ansible.errors import AnsibleError
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader

    try:
        return InventoryManager(loader=DataLoader(), sources=[str(inventory)])
    except AnsibleError as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else "it does not parse"
        raise InventoryError(f"inventory {inventory} is broken: {first}") from None


def group_hosts(inventory: Path, group: str) -> list[str]:
    """The hosts of `group`, or InventoryError naming the group to fill."""
    manager = load_inventory(inventory)
    found = manager.groups.get(group)
    hosts = [host.name for host in found.get_hosts()] if found else []
    if not hosts:
        raise InventoryError(f"inventory {inventory} has no hosts in the group '{group}': list the nodes there")
    return hosts


def limited_hosts(inventory: Path, limit: str | None) -> list[str]:
    """The hosts a play on `all` would target with --limit `limit`, or InventoryError when none."""
    manager = load_inventory(inventory)
    if limit:
        manager.subset(limit)
    hosts = [host.name for host in manager.get_hosts("all")]
    if not hosts and limit:
        raise InventoryError(f"--limit {limit!r} matches no host of {inventory}: give hosts or groups it lists")
    if not hosts:
        raise InventoryError(f"inventory {inventory} has no hosts: list the nodes in it")
    return hosts
