"""module_utils.profile.container: the profile for a container keeps no path of the host's files."""

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.profile.container import container_env

PINNED = {"NCCL_SOCKET_IFNAME": "=eth1", "GLOO_SOCKET_IFNAME": "eth1", "NCCL_NET": "AWS Libfabric",
          "OMPI_MCA_btl_tcp_if_include": "10.0.0.0/16"}


def test_values_without_a_host_path_are_kept_as_they_are():
    assert container_env(PINNED) == (PINNED, [])


@pytest.mark.parametrize("path, short", [
    ("/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu/libnccl-net-ofi.so", "ofi"),
    ("/opt/amazon/ofi-nccl/lib64/libnccl-net-aws-ofi.so.1", "aws-ofi"),
])
def test_a_plugin_s_host_path_becomes_the_short_name_the_image_s_loader_finds(path, short):
    env, notes = container_env({**PINNED, "NCCL_NET_PLUGIN": path})
    assert env == {**PINNED, "NCCL_NET_PLUGIN": short}
    assert notes == [f"NCCL_NET_PLUGIN: {short} instead of the host's path {path} (the image's loader finds it)"]


def test_the_default_plugin_name_and_the_host_s_read_files_are_left_out_and_said():
    env, notes = container_env({**PINNED, "NCCL_NET_PLUGIN": "/opt/amazon/ofi-nccl/lib/libnccl-net.so",
                                "NCCL_TOPO_FILE": "/etc/nccl/topo.xml", "LD_LIBRARY_PATH": "/opt/amazon/efa/lib"})
    assert env == PINNED
    assert [note.split(":")[0] for note in notes] == ["LD_LIBRARY_PATH", "NCCL_NET_PLUGIN", "NCCL_TOPO_FILE"]
    assert "unset, NCCL loads libnccl-net.so" in notes[1]


def test_files_the_job_writes_stay():
    written = {"NCCL_DEBUG_FILE": "/var/log/nccl/%h.%p.log", "TORCH_FR_DUMP_TEMP_FILE": "/var/tmp/fr/rank"}
    assert container_env({**PINNED, **written}) == ({**PINNED, **written}, [])
