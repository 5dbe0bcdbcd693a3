"""Which environment variable names look like they hold a secret, and the file modes that follow.

A file the roles write that carries such a value is readable by root alone: an access token in
nccl_profile_extra_env must not land in a world-readable /etc/profile.d file. The names are
matched case-insensitively on TOKEN, KEY, SECRET and PASSWORD (PASSWD too).

Pure Python 3.8+ standard library.
"""

from __future__ import annotations

import re

_SECRET_NAME = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|PASSWD", re.IGNORECASE)
# NCCL's own names that match but hold no secret: the InfiniBand partition key is a number every
# node of the fabric shares (and NCCL must read /etc/nccl.conf in unprivileged processes).
PUBLIC_NAMES = frozenset(["NCCL_IB_PKEY"])


def secret_names(names):
    """The names of `names` (a dict's keys or any iterable) that look secret, sorted."""
    return sorted(str(name) for name in names
                  if _SECRET_NAME.search(str(name)) and str(name).upper() not in PUBLIC_NAMES)


def env_file_mode(names, readable="0644", private="0600"):
    """`private` when any of `names` looks secret, else `readable` (modes as Ansible's strings)."""
    return private if secret_names(names) else readable
