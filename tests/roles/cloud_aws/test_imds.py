"""IMDSv2 reading (clouds.aws.imds) against a loopback stand-in: token first, 401 without one, as EC2 does."""

import threading

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.clouds.aws.imds import ImdsError, read_instance

from .imds_standin import identity, serve


@pytest.fixture
def imds():
    data = identity("i-0abc", "us-east-1b", "0e:00:00:00:00:02")
    data.update({"network/interfaces/macs/": "0e:00:00:00:00:02/\n0e:00:00:00:00:01/",
                 "network/interfaces/macs/0e:00:00:00:00:01/interface-id": "eni-1",
                 "network/interfaces/macs/0e:00:00:00:00:01/device-number": "0",
                 "network/interfaces/macs/0e:00:00:00:00:02/interface-id": "eni-2",
                 "network/interfaces/macs/0e:00:00:00:00:02/device-number": "1"})
    server = serve("127.0.0.1", 0, data)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_reads_identity_with_a_token(imds):
    found = read_instance(imds, 1.0)
    assert found["instance_id"] == "i-0abc" and found["region"] == "us-east-1"
    assert [nic["interface_id"] for nic in found["interfaces"]] == ["eni-1", "eni-2"]


def test_a_local_zone_takes_the_region_imds_names():
    # A Local Zone's name is not its region plus a letter: placement/region says the region.
    data = identity("i-0lz", "us-west-2-lax-1a")
    data["placement/region"] = "us-west-2"
    server = serve("127.0.0.1", 0, data)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        found = read_instance(f"http://127.0.0.1:{server.server_address[1]}", 1.0)
    finally:
        server.shutdown()
    assert found["region"] == "us-west-2" and found["availability_zone"] == "us-west-2-lax-1a"


def test_no_token_means_401(imds):
    import urllib.error
    import urllib.request

    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(imds + "/latest/meta-data/instance-id", timeout=1)
    assert err.value.code == 401


def test_off_ec2_one_line_naming_the_fix():
    with pytest.raises(ImdsError, match="set aws_instance_id for this host"):
        read_instance("http://127.0.0.1:9", 0.5)
