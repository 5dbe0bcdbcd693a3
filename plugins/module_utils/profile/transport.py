# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""The transport NCCL uses between hosts under a profile's environment.

Pure Python 3.8+ standard library.
"""

from __future__ import annotations

OFI_NETS = ("Libfabric", "AWS Libfabric", "OFI")


def expected_transport(env):
    """efa where the aws-ofi-nccl plugin is pinned (NCCL_NET), ib where NCCL's IB transport is on
    (IB, RoCE, eRDMA: NCCL_IB_DISABLE=0 and NCCL_NET empty or IB), else any."""
    env = env or {}
    net = str(env.get("NCCL_NET", ""))
    if net in OFI_NETS:
        return "efa"
    if str(env.get("NCCL_IB_DISABLE", "1")) == "0" and net in ("", "IB"):
        return "ib"
    return "any"
