"""IMDSv2 reading (aws_imds) against a loopback stand-in: token first, 401 without one, as EC2 does."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.aws_imds import ImdsError, read_instance

TOKEN = "test-token-123"
DATA = {"instance-id": "i-0abc", "placement/availability-zone": "us-east-1b",
        "network/interfaces/macs/": "0e:00:00:00:00:02/\n0e:00:00:00:00:01/",
        "network/interfaces/macs/0e:00:00:00:00:01/interface-id": "eni-1",
        "network/interfaces/macs/0e:00:00:00:00:01/device-number": "0",
        "network/interfaces/macs/0e:00:00:00:00:02/interface-id": "eni-2",
        "network/interfaces/macs/0e:00:00:00:00:02/device-number": "1"}


class Imds(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _send(self, code, body=""):
        self.send_response(code)
        self.end_headers()
        self.wfile.write(body.encode())

    def do_PUT(self):
        if self.path == "/latest/api/token" and self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
            return self._send(200, TOKEN)
        return self._send(400)

    def do_GET(self):
        if self.headers.get("X-aws-ec2-metadata-token") != TOKEN:
            return self._send(401)
        key = self.path.removeprefix("/latest/meta-data/")
        return self._send(200, DATA[key]) if key in DATA else self._send(404)


@pytest.fixture
def imds():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Imds)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_reads_identity_with_a_token(imds):
    found = read_instance(imds, 1.0)
    assert found["instance_id"] == "i-0abc" and found["region"] == "us-east-1"
    assert [nic["interface_id"] for nic in found["interfaces"]] == ["eni-1", "eni-2"]


def test_no_token_means_401(imds):
    import urllib.error
    import urllib.request

    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(imds + "/latest/meta-data/instance-id", timeout=1)
    assert err.value.code == 401


def test_off_ec2_one_line_naming_the_fix():
    with pytest.raises(ImdsError, match="set aws_instance_id for this host"):
        read_instance("http://127.0.0.1:9", 0.5)
