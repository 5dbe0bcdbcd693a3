# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""The attributes every ncclkit.cluster module documents, described once. A module names its own
support (and details) for each in its `attributes:` block; the descriptions and the platform come
from here."""

from __future__ import annotations


class ModuleDocFragment:  # pylint: disable=too-few-public-methods
    """`extends_documentation_fragment: ncclkit.cluster.attributes`."""

    DOCUMENTATION = r"""
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
  platform:
    description: Target OS/families that can be operated against.
    support: full
    platforms: posix
    details: Linux hosts (the modules read C(/proc), C(/sys) and netlink where they read the host).
"""
