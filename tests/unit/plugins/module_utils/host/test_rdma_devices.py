"""module_utils.rdma_devices: which RDMA ports turn NCCL's IB transport on."""

from ansible_collections.ncclkit.cluster.plugins.module_utils.host.rdma import (
    rdma_disagreement,
    rdma_ports,
    usable_rdma_ports,
)

LISTING = [
    "mlx5_0|1|4: ACTIVE|InfiniBand|mlx5_core",
    "mlx5_1|1|1: DOWN|InfiniBand|mlx5_core",
    "mlx5_2|1|4: ACTIVE|Ethernet|mlx5_core",      # RoCE
    "erdma_0|1|4: ACTIVE|Ethernet|erdma",         # Alibaba eRDMA
    "rdmap0s6|1|4: ACTIVE|Unspecified|efa",       # AWS EFA: only through its plugin
    "",
]


def test_active_ib_roce_and_erdma_ports_are_usable_efa_and_down_ports_are_not():
    assert usable_rdma_ports(LISTING) == ["mlx5_0:1", "mlx5_2:1", "erdma_0:1"]


def test_every_listed_port_is_described():
    ports = rdma_ports(LISTING)
    assert len(ports) == 5
    assert ports[1] == {"device": "mlx5_1", "port": "1", "state": "1: DOWN", "link_layer": "InfiniBand",
                        "driver": "mlx5_core", "active": False, "usable": False}
    assert ports[4]["active"] and not ports[4]["usable"]


def test_a_host_without_rdma_has_no_port():
    assert usable_rdma_ports([]) == [] and usable_rdma_ports(None) == []
    assert usable_rdma_ports(["broken-line"]) == []


def test_hosts_that_agree_on_rdma_are_fine():
    assert rdma_disagreement({"n1": ["mlx5_0:1"], "n2": ["mlx5_0:1"]}) == ""
    assert rdma_disagreement({"n1": [], "n2": []}) == ""
    assert rdma_disagreement({}) == ""


def test_a_host_with_a_dead_port_among_rdma_hosts_is_named_with_the_fix():
    message = rdma_disagreement({"n1": ["mlx5_0:1"], "n2": [], "n3": ["mlx5_0:1", "mlx5_1:1"]})
    assert message.startswith("nccl_profile_rdma is auto and the hosts differ: n1 (mlx5_0:1), "
                              "n3 (mlx5_0:1, mlx5_1:1) have an active RDMA port NCCL can use, n2 has none")
    assert "Bring the ports up on n2" in message
    assert "set nccl_profile_rdma to disabled" in message and "required" in message


def test_the_transport_follows_the_active_devices():
    from ansible_collections.ncclkit.cluster.plugins.module_utils.host.rdma import rdma_transport
    assert rdma_transport([]) == "socket"
    assert rdma_transport(["mlx5_0|1|4: ACTIVE|InfiniBand|mlx5_core"]) == "ib"
    assert rdma_transport(["rocep0s5|1|4: ACTIVE|Ethernet|erdma"]) == "erdma"
    assert rdma_transport(["rdmap0s6|1|4: ACTIVE|Unspecified|efa"]) == "efa"
    assert rdma_transport(["mlx5_0|1|1: DOWN|InfiniBand|mlx5_core"]) == "socket"
