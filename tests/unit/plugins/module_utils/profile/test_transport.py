"""profile.transport: what NCCL uses between hosts under a profile's environment."""

from __future__ import annotations

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.profile.transport import expected_transport


@pytest.mark.parametrize(("env", "transport"), [
    ({"NCCL_NET": "AWS Libfabric"}, "efa"),
    ({"NCCL_NET": "OFI", "NCCL_IB_DISABLE": "0"}, "efa"),
    ({"NCCL_IB_DISABLE": "0"}, "ib"),
    ({"NCCL_IB_DISABLE": 0, "NCCL_NET": "IB"}, "ib"),
    ({"NCCL_IB_DISABLE": "0", "NCCL_NET": "Socket"}, "any"),
    ({"NCCL_IB_DISABLE": "1"}, "any"),
    ({}, "any"),
    (None, "any"),
])
def test_expected_transport(env, transport):
    assert expected_transport(env) == transport
