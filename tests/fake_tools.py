"""Stand-in host commands for unit tests (a script on disk that a module runs as the real tool)."""

from __future__ import annotations


def fake_smi(folder, body):
    """An executable `nvidia-smi` in `folder` whose body is `body` (sh); its path."""
    script = folder / "nvidia-smi"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(0o755)
    return str(script)
