"""Writing a host file the way every ncclkit module does: into a temporary file beside it, then
moved into place atomically, so that a reader (systemd at boot, a shell) never sees half a file."""

from __future__ import annotations

import os


def write_atomically(module, path: str, content: str, mode: int = 0o644) -> None:
    """Write `content` to `path` (folders made 0755) through AnsibleModule.atomic_move."""
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    temp = f"{path}.ncclkit-tmp"
    with open(temp, "w") as handle:
        handle.write(content)
    os.chmod(temp, mode)
    module.atomic_move(temp, path)
