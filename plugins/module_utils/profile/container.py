"""The profile as a container on the host takes it (`docker run --env-file /etc/ncclkit/nccl.container.env`).

Pure Python 3.8+ standard library. The host's profile may name files of the host: a plugin's full
path, a topology file, a library path. An image has its own filesystem, so such a value points at
nothing there (NGC images keep aws-ofi-nccl under /opt/amazon/aws-ofi-nccl/lib, not where the
host's package put it). Each value the container cannot use as it is is changed or left out:

- a plugin given by its path (NCCL_NET_PLUGIN=/opt/.../libnccl-net-ofi.so) becomes the short name
  the image's loader resolves (`ofi`); `libnccl-net.so` is what NCCL loads when the name is unset;
- a file NCCL or the loader reads (NCCL_TOPO_FILE, LD_LIBRARY_PATH, ...) is left out: mount it and
  set it yourself where the image should read it;
- a file the job writes (NCCL_DEBUG_FILE, the flight recorder's prefix) stays: inside the container
  it is written to the container's path, kept only where that folder is a mounted volume.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

from ansible_collections.ncclkit.cluster.plugins.module_utils.common.nccl_plugins import short_plugin_name

# NCCL's plugins named by a path up to NCCL 2.20's libnccl-<kind>-<name>.so convention.
_PLUGINS = {"NCCL_NET_PLUGIN": "net", "NCCL_TUNER_PLUGIN": "tuner", "NCCL_PROFILER_PLUGIN": "profiler"}
# Files of the host a library reads: meaningless in an image.
READ_ON_HOST = ("NCCL_TOPO_FILE", "NCCL_GRAPH_FILE", "NCCL_CONF_FILE", "LD_LIBRARY_PATH", "LD_PRELOAD", "PATH",
                "PYTHONPATH", "CUDA_HOME", "NCCL_HOME", "MPI_HOME", "OPAL_PREFIX")
# Files the job writes: kept (they are written inside the container).
WRITTEN = ("NCCL_DEBUG_FILE", "TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE")


def container_env(env: Dict[str, str]) -> Tuple[Dict[str, str], List[str]]:
    """(the environment for a container on this host, one note per value changed or left out)."""
    kept: Dict[str, str] = {}
    notes: List[str] = []
    for name, value in sorted((env or {}).items()):
        text = str(value)
        if name in _PLUGINS and text.startswith("/"):
            short = short_plugin_name(text, _PLUGINS[name])
            if short:
                kept[name] = short
                notes.append(f"{name}: {short} instead of the host's path {text} (the image's loader finds it)")
            else:
                notes.append(f"{name}: left out (the host's path {text}; unset, NCCL loads libnccl-{_PLUGINS[name]}.so)")
        elif name in READ_ON_HOST or (name not in WRITTEN and text.startswith("/") and name not in _PLUGINS):
            notes.append(f"{name}: left out (the host's {text} is not in the image: mount it and set it there)")
        else:
            kept[name] = text
    return kept, notes
