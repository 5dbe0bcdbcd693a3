"""Where the collection lives: this checkout, or the copy installed beside the package."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path


def checkout_root(start: Path | None = None) -> Path | None:
    """The nearest folder at or above `start` that holds galaxy.yml and site.yml, if any."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "galaxy.yml").is_file() and (folder / "site.yml").is_file():
            return folder
    return None


def collection_root() -> Path:
    """The ncclkit.cluster collection: the checkout in use, else the installed copy."""
    root = checkout_root()
    if root:
        return root
    import ansible_collections.ncclkit.cluster as installed  # the wheel's copy

    return Path(next(iter(installed.__path__)))


def site_playbook(root: Path) -> Path:
    return root / "site.yml" if (root / "site.yml").is_file() else root / "playbooks" / "site.yml"


def module_utils(name: str):
    """plugins/module_utils/<name> of the collection in use: the parsing lives there, once."""
    root = checkout_root()
    if root and (root / "collections" / "ansible_collections").is_dir():
        path = str(root / "collections")
        if path not in sys.path:
            sys.path.insert(0, path)
    return importlib.import_module(f"ansible_collections.ncclkit.cluster.plugins.module_utils.{name}")
