"""The ncclkit.cluster filters of nccl_profile turn the module_utils' errors into Ansible's."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.ncclkit.cluster.plugins.filter.nccl_profile import FilterModule

FILTERS = FilterModule().filters()
SETTINGS = {"ifname": "eth1", "cluster_networks": ["10.0.0.0/24"]}


def test_the_env_filter_and_its_problems():
    assert FILTERS["nccl_profile_env"](SETTINGS)["NCCL_SOCKET_IFNAME"] == "=eth1"
    assert FILTERS["nccl_profile_env_problems"](SETTINGS) == []
    bad = {**SETTINGS, "tuning": {"NCCL_SOCKET_NTHREADS": 32}}
    assert len(FILTERS["nccl_profile_env_problems"](bad)) == 1
    with pytest.raises(AnsibleFilterError, match="NCCL_SOCKET_NTHREADS"):
        FILTERS["nccl_profile_env"](bad)


def test_the_launch_filters():
    hosts, addresses, slots = ["n1", "n2"], {"n1": "10.0.0.1", "n2": "10.0.0.2"}, {"n1": 1, "n2": 1}
    assert FILTERS["nccl_launch_plan"]("n2", hosts, addresses, slots, 29500)["node_rank"] == 1
    assert FILTERS["nccl_hostfile_lines"](hosts, addresses, slots) == ["10.0.0.1 slots=1", "10.0.0.2 slots=1"]
    assert FILTERS["nccl_launch_problems"](hosts, addresses, slots, 0) != []
    with pytest.raises(AnsibleFilterError, match="not a port"):
        FILTERS["nccl_launch_plan"]("n2", hosts, addresses, slots, 0)
    with pytest.raises(AnsibleFilterError, match="n2 has no cluster address"):
        FILTERS["nccl_hostfile_lines"](hosts, {"n1": "10.0.0.1"}, slots)
    assert FILTERS["nccl_env_uniform_names"]([{"A": "1"}, {"A": "1"}]) == ["A"]
    assert FILTERS["rdma_usable_ports"](["mlx5_0|1|4: ACTIVE|InfiniBand|mlx5_core"]) == ["mlx5_0:1"]
