"""What `ncclkit lab` needs from the machine: root and a few tools, checked before touching anything."""

from __future__ import annotations

import os
import shutil

from ncclkit.lab.errors import LabPrerequisiteError

# tool -> the Debian package that provides it
PACKAGES = {
    "ip": "iproute2",
    "bridge": "iproute2",
    "unshare": "util-linux",
    "nsenter": "util-linux",
    "setsid": "util-linux",
    "mount": "mount",
    "sshd": "openssh-server",
    "ssh-keygen": "openssh-client",
}
UP_TOOLS = ("ip", "bridge", "unshare", "nsenter", "setsid", "mount", "sshd", "ssh-keygen")
DOWN_TOOLS = ("ip",)
EXEC_TOOLS = ("nsenter",)

# sshd and ip live in sbin, which a plain user's PATH may lack.
_SBIN = ("/usr/local/sbin", "/usr/sbin", "/sbin")


def require_root() -> None:
    if os.geteuid() != 0:
        raise LabPrerequisiteError("ncclkit lab needs root: run it with sudo")


def find_tool(name: str) -> str | None:
    path = os.pathsep.join([os.environ.get("PATH", ""), *_SBIN])
    return shutil.which(name, path=path)


def require_tools(names: tuple[str, ...]) -> dict[str, str]:
    """The absolute path of each tool; the first missing one is an error naming its package."""
    found = {}
    for name in names:
        path = find_tool(name)
        if not path:
            raise LabPrerequisiteError(
                f"ncclkit lab needs {name}: apt-get install {PACKAGES.get(name, name)}")
        found[name] = path
    return found


def require(names: tuple[str, ...]) -> dict[str, str]:
    require_root()
    return require_tools(names)
