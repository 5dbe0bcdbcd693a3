# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""The transport NCCL uses between hosts under a profile's environment.

Pure Python 3.8+ standard library.
"""

from __future__ import annotations

from .env import is_libfabric_net


def expected_transport(env):
    """efa where the aws-ofi-nccl plugin is pinned (NCCL_NET), ib where NCCL's IB transport is on
    (IB, RoCE, eRDMA: NCCL_IB_DISABLE=0 and NCCL_NET empty or IB), else any. NCCL compares
    NCCL_NET without case, and so does this."""
    env = env or {}
    net = str(env.get("NCCL_NET", ""))
    if is_libfabric_net(net):
        return "efa"
    if str(env.get("NCCL_IB_DISABLE", "1")) == "0" and net.strip().upper() in ("", "IB"):
        return "ib"
    return "any"
