"""The ncclkit.cluster filters of nccl_profile turn the module_utils' errors into Ansible's."""

import pytest

SETTINGS = {"ifname": "eth1", "cluster_networks": ["10.0.0.0/24"]}


@pytest.fixture(scope="module")
def filters():
    """The filters and AnsibleFilterError, imported here rather than at collection: importing
    Ansible's controller code flips module_utils into controller mode (module warnings then go to
    Display, not the result), which the module tests must not inherit. Restored afterwards."""
    from ansible.module_utils import _internal

    was_controller = _internal.is_controller
    from ansible.errors import AnsibleFilterError

    from ansible_collections.ncclkit.cluster.plugins.filter import host, profile

    yield {**profile.FilterModule().filters(), **host.FilterModule().filters()}, AnsibleFilterError
    _internal.is_controller = was_controller


def test_the_env_filter_and_its_problems(filters):
    found, filter_error = filters
    assert found["nccl_profile_env"](SETTINGS)["NCCL_SOCKET_IFNAME"] == "=eth1"
    assert found["nccl_profile_env_problems"](SETTINGS) == []
    bad = {**SETTINGS, "tuning": {"NCCL_SOCKET_NTHREADS": 32}}
    assert len(found["nccl_profile_env_problems"](bad)) == 1
    with pytest.raises(filter_error, match="NCCL_SOCKET_NTHREADS"):
        found["nccl_profile_env"](bad)


def test_the_launch_filters(filters):
    found, filter_error = filters
    hosts, addresses, slots = ["n1", "n2"], {"n1": "10.0.0.1", "n2": "10.0.0.2"}, {"n1": 1, "n2": 1}
    assert found["nccl_launch_plan"]("n2", hosts, addresses, slots, 29500)["node_rank"] == 1
    assert found["nccl_hostfile_lines"](hosts, addresses, slots) == ["10.0.0.1 slots=1", "10.0.0.2 slots=1"]
    assert found["nccl_launch_problems"](hosts, addresses, slots, 0) != []
    with pytest.raises(filter_error, match="not a port"):
        found["nccl_launch_plan"]("n2", hosts, addresses, slots, 0)
    with pytest.raises(filter_error, match="n2 has no cluster address"):
        found["nccl_hostfile_lines"](hosts, {"n1": "10.0.0.1"}, slots)
    assert found["nccl_env_uniform_names"]([{"A": "1"}, {"A": "1"}]) == ["A"]
    assert found["rdma_usable_ports"](["mlx5_0|1|4: ACTIVE|InfiniBand|mlx5_core"]) == ["mlx5_0:1"]
    assert "n1 (mlx5_0:1) has an active RDMA port NCCL can use, n2 has none" in \
        found["rdma_disagreement"]({"n1": ["mlx5_0:1"], "n2": []})
    assert found["rdma_disagreement"]({"n1": [], "n2": []}) == ""
