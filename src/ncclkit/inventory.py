"""Reading an inventory the way ansible-playbook will, before a play starts: a missing or broken
inventory is the caller's bad input (one line, exit code 3), not a play that matches no host."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

# ansible-core's warning for each inventory plugin that could not read the source.
PARSE_FAILURE = re.compile(r"Failed to parse inventory with '[\w.]+' plugin: (.+)")


class InventoryError(ValueError):
    """The inventory is missing, empty or does not parse; the message names it and the fix."""


def load_inventory(inventory: Path):
    """ansible-core's InventoryManager for `inventory`, or InventoryError."""
    if not inventory.exists():
        raise InventoryError(f"inventory {inventory} does not exist (for the lab: run 'ncclkit lab up' first)")
    # An inventory no plugin can parse is an error, not the warning ansible-playbook prints (where
    # ansible's settings are not read yet; else the warnings below tell).
    os.environ.setdefault("ANSIBLE_INVENTORY_UNPARSED_FAILED", "true")
    from ansible.errors import AnsibleError
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader

    warnings = io.StringIO()
    try:
        # ansible prints a warning for each plugin that failed: the error says it in one line.
        with contextlib.redirect_stderr(warnings), contextlib.redirect_stdout(io.StringIO()):
            manager = InventoryManager(loader=DataLoader(), sources=[str(inventory)])
    except AnsibleError as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else "it does not parse"
        raise InventoryError(f"inventory {inventory} is broken: {_parse_failure(warnings) or first}") from None
    cause = _parse_failure(warnings)
    if cause and not manager.hosts:
        raise InventoryError(f"inventory {inventory} is broken: {cause}")
    return manager


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
    # "Could not match supplied host pattern" is a warning there: the error below says it.
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        if limit:
            manager.subset(limit)
        hosts = [host.name for host in manager.get_hosts("all")]
    if not hosts and limit:
        raise InventoryError(f"--limit {limit!r} matches no host of {inventory}: give hosts or groups it lists")
    if not hosts:
        raise InventoryError(f"inventory {inventory} has no hosts: list the nodes in it")
    return hosts


def _parse_failure(warnings: io.StringIO) -> str:
    found = PARSE_FAILURE.search(warnings.getvalue())
    return found.group(1).strip() if found else ""
