"""Which copy of the collection ncclkit uses: the checkout the user is in, else the copy installed
beside the package (the wheel's). `use_collection()` decides once per process and makes the
command's own imports (`ansible_collections.ncclkit.cluster...`) and the playbooks it runs
(ANSIBLE_COLLECTIONS_PATH, which ansible-runner passes on to ansible-playbook) take that one copy."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

# ansible-core's own default, kept after ours so other collections (amazon.aws) still resolve.
ANSIBLE_DEFAULT_COLLECTIONS_PATH = "~/.ansible/collections:/usr/share/ansible/collections"
_CHOSEN: list[Path] = []


class CollectionNotFound(RuntimeError):
    """Neither a checkout nor an installed copy of ncclkit.cluster was found."""


def checkout_root(start: Path | None = None) -> Path | None:
    """The nearest folder at or above `start` that holds galaxy.yml and site.yml, if any."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "galaxy.yml").is_file() and (folder / "site.yml").is_file():
            return folder
    return None


def installed_root() -> Path | None:
    """The collection the wheel installs beside the package (site-packages/ansible_collections/...),
    or, for a package run from a checkout's src/, that checkout."""
    package = Path(__file__).resolve().parent
    beside = package.parent / "ansible_collections" / "ncclkit" / "cluster"
    if (beside / "galaxy.yml").is_file():
        return beside
    return checkout_root(package.parent.parent) if package.parent.name == "src" else None


def search_path(root: Path) -> Path:
    """The folder holding `ansible_collections/ncclkit/cluster` for `root`: a checkout's
    collections/ (its committed link to itself), else the folder the installed copy lies in
    (site-packages)."""
    if (root / "collections" / "ansible_collections" / "ncclkit" / "cluster").exists():
        return root / "collections"
    return root.parent.parent.parent


def use_collection(start: Path | None = None) -> Path:
    """The collection's root, decided at the first call: the checkout holding `start` (default: the
    current folder), else the installed copy. Its search path goes first on sys.path and in
    ANSIBLE_COLLECTIONS_PATH; later calls return the same root."""
    if _CHOSEN:
        return _CHOSEN[0]
    checkout = checkout_root(start)
    has_link = checkout and (checkout / "collections" / "ansible_collections" / "ncclkit" / "cluster").exists()
    root = checkout if has_link else installed_root()
    if root is None:
        raise CollectionNotFound("ncclkit: the collection ncclkit.cluster was found neither in a checkout around "
                                 f"{start or Path.cwd()} nor beside the package: reinstall ncclkit "
                                 "(pip install ncclkit) or run it inside a checkout")
    folder = str(search_path(root))
    if folder in sys.path:
        sys.path.remove(folder)
    sys.path.insert(0, folder)
    importlib.invalidate_caches()
    others = os.environ.get("ANSIBLE_COLLECTIONS_PATH") or os.environ.get("ANSIBLE_COLLECTIONS_PATHS")
    kept = [entry for entry in (others or ANSIBLE_DEFAULT_COLLECTIONS_PATH).split(os.pathsep) if entry != folder]
    os.environ["ANSIBLE_COLLECTIONS_PATH"] = os.pathsep.join([folder, *kept])
    _CHOSEN.append(root)
    return root


def collection_root() -> Path:
    """The ncclkit.cluster collection in use (see use_collection)."""
    return use_collection()


def collection_version(root: Path) -> str:
    """galaxy.yml's `version:` of the collection at `root` ("unknown" when it cannot be read)."""
    try:
        for line in (root / "galaxy.yml").read_text().splitlines():
            if line.startswith("version:"):
                return line.split(":", 1)[1].strip().strip("'\"")
    except OSError:
        pass
    return "unknown"


def site_playbook(root: Path) -> Path:
    return root / "site.yml" if (root / "site.yml").is_file() else root / "playbooks" / "site.yml"
