# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""The hosts of the cluster that the play cannot count on: those that failed earlier in the play,
and those without a cluster address (nccl_preflight did not choose their cluster NIC).

Pure Python 3.8+ standard library.
"""

from __future__ import annotations


def hosts_left_out(all_hosts, running_hosts, addressed_hosts):
    """Sorted names of `all_hosts` (ansible_play_hosts_all) not in `running_hosts`
    (ansible_play_hosts: the others failed) or not in `addressed_hosts` (those with
    ncclkit_cluster_ip); [] when every host can take part."""
    running, addressed = set(running_hosts), set(addressed_hosts)
    return sorted({host for host in all_hosts if host not in running or host not in addressed})
