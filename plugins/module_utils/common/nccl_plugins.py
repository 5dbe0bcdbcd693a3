"""The short name NCCL takes for a plugin library: NCCL_NET_PLUGIN=ofi opens libnccl-net-ofi.so.

Pure Python 3.8+ standard library. NCCL up to 2.20 only builds libnccl-<kind>-<value>.so from the
variable (a full path needs 2.21), and an image's loader finds the short name where the host's path
does not exist: clouds/aws (the plugin setting) and profile (the container env file) both ask here.
"""

from __future__ import annotations

import os
import re


def short_plugin_name(path: str, kind: str = "net") -> str:
    """"ofi" for .../libnccl-net-ofi.so (or .so.1); "" for libnccl-net.so, which NCCL opens when the
    variable is unset, and for a name of another shape."""
    match = re.fullmatch(rf"libnccl-{re.escape(kind)}-(.+)\.so(?:\.\d+)*", os.path.basename(path or ""))
    return match.group(1) if match else ""
