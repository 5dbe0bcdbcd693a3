"""EFA on the hosts: found by driver, the EFA installer run only from an archive whose sha256 matches,
once; the profile pins aws-ofi-nccl; validation passes a run that used the efa provider and fails a
fall-back. Lab 101 for the role; real logs for the verdicts.

The fake fi_info prints the efa provider block as AWS documents it for `fi_info -p efa -t FI_EP_RDM`
(https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-start-nccl.html); the RDMA port line of an
EFA device follows the kernel's /sys/class/infiniband layout with the efa driver
(https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa.html).
"""

from __future__ import annotations

import hashlib
import io
import re
import sys
import tarfile
from pathlib import Path

import pytest
import yaml
from cloud_alibaba.test_erdma import profile_script_lines, rdma_device
from lab_indices import lab_index
from lab_playbook import lab_cluster, play

from ansible_collections.ncclkit.cluster.plugins.module_utils.clouds.aws.efa_host import (
    efa_devices,
    efa_env,
    fi_info_version,
)
from ansible_collections.ncclkit.cluster.plugins.module_utils.clouds.aws.efa_installer import PUBLISHED_SHA256
from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.log import read_nccl_log
from ansible_collections.ncclkit.cluster.plugins.module_utils.profile.env import profile_env
from ansible_collections.ncclkit.cluster.plugins.module_utils.report import run_verdict
from conftest import SAMPLES

INDEX = lab_index(__file__)
EFA_PORT = "rdmap0s6|1|4: ACTIVE|Ethernet|efa"
FI_INFO = """provider: efa
    fabric: efa
    domain: rdmap0s31-rdm
    version: 111.20
    type: FI_EP_RDM
    protocol: FI_PROTO_EFA
"""
INSTALLER = f"""#!/bin/sh
# Stand-in for AWS's efa_installer.sh: records its arguments, lays out what the real one installs.
set -e
mkdir -p /opt/amazon/efa/bin /opt/amazon/ofi-nccl/lib
echo "$@" >> /opt/amazon/efa-installer-runs
printf '#!/bin/sh\\ncat <<"EOF"\\n{FI_INFO}EOF\\n' > /opt/amazon/efa/bin/fi_info
chmod 755 /opt/amazon/efa/bin/fi_info
: > /opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so
"""


def test_efa_is_found_by_driver_and_fi_info_is_read(tmp_path):
    # A fake /sys/class/infiniband with an EFA device (AWS names them rdmap<bus>s<slot>), read by
    # nccl_preflight's own listing script.
    rdma_device(tmp_path, "rdmap0s6", "efa", link_layer="Unspecified")
    rdma_device(tmp_path, "mlx5_0", "mlx5_core", link_layer="InfiniBand")
    lines = profile_script_lines(tmp_path)
    # The sixth field is the port's rate (none in this fake sysfs).
    assert "rdmap0s6|1|4: ACTIVE|Unspecified|efa|" in lines
    assert efa_devices(lines) == ["rdmap0s6"]
    assert fi_info_version(FI_INFO) == "111.20"
    assert fi_info_version("provider: tcp;ofi_rxm\n    version: 1.0\n") == ""


def test_the_efa_profile_pins_the_plugin_and_leaves_the_rest_to_it():
    plugin = "/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so"
    env = efa_env({"FI_PROVIDER": "efa", "NCCL_PROTO": "simple", "X": "1"}, plugin, ["2.21.5"])
    assert env == {"X": "1", "NCCL_NET": "AWS Libfabric", "NCCL_NET_PLUGIN": plugin}
    profile = profile_env({"ifname": "eth0", "cluster_networks": ["10.0.0.0/16"], "cloud_env": env})
    assert profile["NCCL_NET"] == "AWS Libfabric" and "NCCL_IB_DISABLE" not in profile
    assert profile["NCCL_SOCKET_IFNAME"] == "=eth0"   # bootstrap stays on the cluster NIC


@pytest.mark.parametrize("name", ["aws libfabric", "LIBFABRIC", "ofi", "AWS Libfabric"])
def test_nccl_net_names_compare_without_case_as_nccl_does(name):
    # NCCL matches NCCL_NET with strcasecmp (src/net.cc): any case pins aws-ofi-nccl.
    from ansible_collections.ncclkit.cluster.plugins.filter.profile import expected_transport
    profile = profile_env({"ifname": "eth0", "cluster_networks": ["10.0.0.0/16"], "rdma_usable": True,
                           "cloud_env": {"NCCL_NET": name}})
    assert "NCCL_IB_DISABLE" not in profile
    assert expected_transport({"NCCL_NET": name}) == "efa"
    assert expected_transport({"NCCL_NET": "ib", "NCCL_IB_DISABLE": "0"}) == "ib"


@pytest.mark.parametrize("sample,passed", [("log-nccl-1597-efa-libfabric.txt", True),
                                           ("log-nccl-229-efa-fallback-tcp-ofi-rxm.txt", False),
                                           # NCCL 2.28 without a plugin: "NET/Plugin: Could not find:
                                           # libnccl-net.so", then "Using network Socket".
                                           ("h200-2host-socket-nccl-debug-info.txt", False)])
def test_validation_passes_efa_and_fails_another_provider(sample, passed):
    diagnosis = read_nccl_log((SAMPLES / sample).read_bytes(), expected_transport="efa")
    run = {"name": "multi", "hosts": ["a", "b"], "rc": 0, "expected_transport": "efa",
           "perf": {"passed": True, "gates": [], "rows": [{}]}, "diagnosis": diagnosis}
    ok, reasons = run_verdict(run)
    assert ok is passed, reasons
    if not passed:
        assert "NCCL did not use the expected transport (efa)" in reasons[0] and "EFA was expected" in reasons[0]
        # The fix names the plugin path and both self rules of the security group.
        assert "NCCL_NET_PLUGIN=/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so" in reasons[0], reasons
        # NCCL up to 2.20 never opens a path, whatever LD_LIBRARY_PATH says: the short name there.
        assert "NCCL_NET_PLUGIN=ofi" in reasons[0] and "2.20" in reasons[0], reasons
        assert "inbound from itself and outbound to itself" in reasons[0]


# -- the role on a lab node -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    yield from lab_cluster(INDEX, tmp_path_factory.mktemp(f"lab{INDEX}"), nodes=1)


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    path = tmp_path_factory.mktemp("efa") / "aws-efa-installer-test.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        data = INSTALLER.encode()
        info = tarfile.TarInfo("aws-efa-installer/efa_installer.sh")
        info.size, info.mode = len(data), 0o755
        tar.addfile(info, io.BytesIO(data))
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def efa_play(lab, **variables):
    extra = {"nccl_preflight_rdma_ports": [EFA_PORT], "nccl_profile_ssh_trust": False,
             "nccl_profile_python": sys.executable, **variables}
    return play(lab.inventory_path, "tests/roles/cloud_aws/efa_playbook.yml", extra)


def node1(lab, script):
    return lab.exec("node1", ["sh", "-c", script], capture_output=True, text=True).stdout


@pytest.mark.lab
def test_a_wrong_checksum_installs_nothing_the_right_one_installs_once(lab, archive):
    path, sha256 = archive
    # No checksum set: the default version's published one is expected, which this test archive is not.
    wrong = efa_play(lab, cloud_aws_efa_installer_archive=str(path))
    assert wrong.rc != 0
    defaults = yaml.safe_load((Path(__file__).resolve().parents[3] / "roles/cloud_aws/defaults/main.yml").read_text())
    published = PUBLISHED_SHA256[defaults["cloud_aws_efa_installer_version"]]
    assert f"The EFA installer archive has sha256 {sha256}, not {published}" in wrong.flat()
    assert node1(lab, "ls /opt/amazon 2>&1; ls /tmp | grep -c ncclkit-efa || true").split() == [
        "ls:", "cannot", "access", "'/opt/amazon':", "No", "such", "file", "or", "directory", "0"]

    right = efa_play(lab, cloud_aws_efa_installer_archive=str(path), cloud_aws_efa_installer_sha256=sha256)
    assert right.rc == 0, right.stdout[-3000:]
    assert node1(lab, "cat /opt/amazon/efa-installer-runs") == "-y\n"       # never --minimal
    conf = node1(lab, "cat /etc/nccl.conf")
    assert "NCCL_NET=AWS Libfabric\n" in conf
    # No NCCL version known in the lab: the short name that every NCCL version loads.
    assert "NCCL_NET_PLUGIN=ofi\n" in conf
    assert re.search(r"^NCCL_IB_DISABLE=", conf, re.M) is None and re.search(r"^NCCL_SOCKET_IFNAME==eth", conf, re.M)
    assert "export NCCL_NET='AWS Libfabric'" in node1(lab, "cat /etc/profile.d/ncclkit.sh")

    again = efa_play(lab, cloud_aws_efa_installer_archive=str(path), cloud_aws_efa_installer_sha256=sha256)
    assert again.rc == 0 and again.recap["node1"]["changed"] == 0
    assert node1(lab, "cat /opt/amazon/efa-installer-runs") == "-y\n"       # installed once
