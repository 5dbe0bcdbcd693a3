"""An IMDSv2 stand-in: PUT /latest/api/token, then GETs with the token; 401 without it, as EC2 answers.

`python imds_standin.py ADDRESS PORT INSTANCE_ID ZONE` serves one instance's identity. The lab
test runs it inside a lab node's network namespace only, on 169.254.169.254:80 (an address it
adds to that namespace's loopback); the unit tests run it on 127.0.0.1.
"""

from __future__ import annotations

import secrets
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def identity(instance_id: str, zone: str, mac: str = "0e:00:00:00:00:01") -> dict:
    return {"instance-id": instance_id, "placement/availability-zone": zone,
            "network/interfaces/macs/": f"{mac}/",
            f"network/interfaces/macs/{mac}/interface-id": "eni-" + instance_id[2:],
            f"network/interfaces/macs/{mac}/device-number": "0"}


def handler(data: dict):
    tokens = set()

    class Imds(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, code, body=""):
            payload = body.encode()
            self.send_response(code)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_PUT(self):
            if self.path != "/latest/api/token" or not self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
                return self._send(400)
            token = secrets.token_urlsafe(16)
            tokens.add(token)
            return self._send(200, token)

        def do_GET(self):
            if self.headers.get("X-aws-ec2-metadata-token") not in tokens:
                return self._send(401)
            key = self.path.removeprefix("/latest/meta-data/")
            return self._send(200, data[key]) if key in data else self._send(404)

    return Imds


def serve(address: str, port: int, data: dict) -> ThreadingHTTPServer:
    return ThreadingHTTPServer((address, port), handler(data))


if __name__ == "__main__":
    host, port, instance, zone = sys.argv[1:5]
    server = serve(host, int(port), identity(instance, zone))
    print("listening", flush=True)
    server.serve_forever()
