"""EFA on a host: the aws-ofi-nccl library in every layout it ships in, and NCCL_NET_PLUGIN chosen by
the NCCL versions that load it (NCCL up to 2.20 builds libnccl-net-<value>.so from the variable,
2.21 first tries the value as a path: NVIDIA/nccl src/net.cc at v2.20.5-1 and v2.21.5-1)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.ncclkit.cluster.plugins.module_utils.clouds.aws.efa_host import (
    efa_env,
    find_plugin,
    install_blocker,
    owned_files,
    plugin_setting,
)
from ansible_collections.ncclkit.cluster.plugins.module_utils.clouds.aws.efa_installer import (
    PUBLISHED_SHA256,
    installer_sha256,
)

COLLECTION = Path(__file__).resolve().parents[5]
LAYOUTS = [
    # EFA installer RPMs (Amazon Linux, RHEL).
    "/opt/amazon/ofi-nccl/lib64/libnccl-net-ofi.so",
    # The Debian package up to aws-ofi-nccl 1.16.x: multiarch folders.
    "/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu/libnccl-net-ofi.so",
    "/opt/amazon/ofi-nccl/lib/aarch64-linux-gnu/libnccl-net-ofi.so",
    # NGC containers.
    "/opt/amazon/aws-ofi-nccl/lib/libnccl-net-ofi.so",
    # An aws-ofi-nccl before 1.13 built from source.
    "/opt/aws-ofi-nccl/lib/libnccl-net.so",
]


def lay_out(root, path):
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"\x7fELF")


@pytest.mark.parametrize("path", LAYOUTS)
def test_the_plugin_is_found_in_every_layout(tmp_path, path):
    lay_out(tmp_path, path)
    assert find_plugin(root=str(tmp_path)) == path


def test_the_package_managers_list_wins_over_the_known_folders(tmp_path):
    lay_out(tmp_path, "/opt/aws-ofi-nccl/lib/libnccl-net.so")
    lay_out(tmp_path, "/usr/lib/custom/libnccl-net-ofi.so")
    listing = "/.\n/usr/lib/custom\n/usr/lib/custom/libnccl-net-ofi.so\n/usr/share/doc/libnccl-ofi/README\n"
    assert owned_files(listing)[-1] == "/usr/share/doc/libnccl-ofi/README"
    assert find_plugin(owned=owned_files(listing), root=str(tmp_path)) == "/usr/lib/custom/libnccl-net-ofi.so"
    assert find_plugin(root=str(tmp_path / "empty")) == ""


OFI = "/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu/libnccl-net-ofi.so"


@pytest.mark.parametrize("versions,expected", [
    (["2.21.5"], OFI),                     # a path loads from 2.21
    (["2.27.3", "2.23.4"], OFI),
    (["2.20.5"], "ofi"),                   # PyTorch 2.3/2.4 wheels: libnccl-net-ofi.so by name
    (["2.27.3", "2.20.5"], "ofi"),         # torch's and the system's differ: a value both load
    ([], "ofi"),                           # unknown: the value every NCCL loads
    (["unknown"], "ofi"),
])
def test_nccl_net_plugin_follows_the_nccl_that_loads_it(versions, expected):
    assert plugin_setting(OFI, versions) == expected
    env = efa_env({"NCCL_NET_PLUGIN": "/stale/path.so"}, OFI, versions)
    assert env == {"NCCL_NET": "AWS Libfabric", "NCCL_NET_PLUGIN": expected}


def test_an_old_plugin_named_libnccl_net_is_left_to_nccls_default_name():
    env = efa_env({}, "/opt/aws-ofi-nccl/lib/libnccl-net.so", ["2.20.5"])
    assert env == {"NCCL_NET": "AWS Libfabric"}     # NCCL then opens libnccl-net.so by itself


def test_no_checksum_on_a_host_with_the_efa_driver_says_what_is_missing_and_what_to_do():
    efa = {"devices": ["rdmap0s6"], "count": 1, "fi_info_ok": True, "fi_info_error": "", "plugin": "",
           "installed": False}
    line = install_blocker(efa, "", "1.43.2")
    assert line.startswith("the kernel's efa driver is loaded (rdmap0s6) but aws-ofi-nccl (package libnccl-ofi;")
    assert "aws-efa-installer-1.43.2.tar.gz" in line and "cloud_aws_efa_install to false" in line
    assert "libfabric" not in line.split(" is missing", maxsplit=1)[0]
    both = install_blocker({**efa, "fi_info_ok": False, "fi_info_error": "fi_getinfo: -61"}, "", "1.43.2")
    assert "libfabric's efa provider (fi_getinfo: -61) and aws-ofi-nccl" in both
    # A sha256, or nothing missing, or no EFA: nothing blocks.
    assert install_blocker(efa, "a" * 64, "1.43.2") == ""
    assert install_blocker({**efa, "installed": True}, "", "1.43.2") == ""
    assert install_blocker({"count": 0}, "", "1.43.2") == ""


def test_a_container_gets_no_host_path():
    from ansible_collections.ncclkit.cluster.plugins.module_utils.clouds.aws.efa_host import container_env

    host = efa_env({}, OFI, ["2.27.3"])
    assert host["NCCL_NET_PLUGIN"] == OFI                       # the host: the path
    assert container_env(host) == {"NCCL_NET": "AWS Libfabric", "NCCL_NET_PLUGIN": "ofi"}
    old = {"NCCL_NET": "AWS Libfabric", "NCCL_NET_PLUGIN": "/opt/aws-ofi-nccl/lib/libnccl-net.so"}
    assert container_env(old) == {"NCCL_NET": "AWS Libfabric"}
    assert container_env({"NCCL_NET_PLUGIN": "ofi"}) == {"NCCL_NET_PLUGIN": "ofi"}


def test_efa_gdr_is_efa_nv_peermem_not_nvidia_peermem():
    from ansible_collections.ncclkit.cluster.plugins.module_utils.clouds.aws.efa_host import efa_gdr_module

    assert efa_gdr_module("efa_nv_peermem 16384 0 - Live 0x0\nefa 151552 1 efa_nv_peermem, Live 0x0\n") == \
        "efa_nv_peermem"
    assert efa_gdr_module("nvidia_peermem 16384 0 - Live 0x0\nefa 151552 0 - Live 0x0\n") == ""


def test_the_default_installer_has_aws_published_checksum_and_a_set_one_wins():
    defaults = yaml.safe_load((COLLECTION / "roles" / "cloud_aws" / "defaults" / "main.yml").read_text())
    version = defaults["cloud_aws_efa_installer_version"]
    assert defaults["cloud_aws_efa_installer_sha256"] == "" and version in PUBLISHED_SHA256
    assert installer_sha256(version, "") == PUBLISHED_SHA256[version]
    assert installer_sha256(version, "AB" * 32) == "ab" * 32
    assert installer_sha256("9.9.9", "") == "" and installer_sha256("9.9.9", "not-a-sum") == ""
    assert all(re.fullmatch(r"[0-9a-f]{64}", value) for value in PUBLISHED_SHA256.values())
    assert len(set(PUBLISHED_SHA256.values())) == len(PUBLISHED_SHA256)


def test_a_version_without_a_published_checksum_says_where_to_get_one():
    efa = {"count": 1, "devices": ["rdmap0s6"], "fi_info_ok": False, "fi_info_error": "no fi_info", "plugin": ""}
    line = install_blocker(efa, installer_sha256("1.30.0", ""), "1.30.0")
    assert "1.41.0 to 1.47.0" in line and "efa-verify.html" in line and "aws-efa-installer-1.30.0.tar.gz" in line
    assert install_blocker(efa, installer_sha256("1.47.0", ""), "1.47.0") == ""
