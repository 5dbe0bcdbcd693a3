"""Read an EC2 instance's identity from IMDSv2 (token first), with the standard library only.

Runs on the host. Short timeouts: off EC2 the address does not answer, and the caller says so
in one line instead of hanging.
"""

from __future__ import annotations

import urllib.error
import urllib.request

TOKEN_PATH = "/latest/api/token"
META = "/latest/meta-data/"
TOKEN_TTL = "60"


class ImdsError(RuntimeError):
    """No instance metadata: not on EC2, IMDS disabled, or a hop limit too low for a container."""


def _request(url, method, headers, timeout):
    request = urllib.request.Request(url, method=method, headers=headers)
    # A direct connection: a proxy from the environment must never see the metadata address.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=timeout) as answer:
        return answer.read().decode("utf-8").strip()


def _region(get, zone):
    """placement/region (a Local Zone's name is not its region plus a letter); the zone less its
    letter where IMDS has no such entry."""
    try:
        return get("placement/region")
    except urllib.error.HTTPError as error:
        if error.code != 404:
            raise
        return zone[:-1]


def read_instance(endpoint="http://169.254.169.254", timeout=2.0):
    """instance_id, availability_zone, region, and the interfaces (mac, interface_id, device_number)."""
    base = endpoint.rstrip("/")
    try:
        token = _request(base + TOKEN_PATH, "PUT", {"X-aws-ec2-metadata-token-ttl-seconds": TOKEN_TTL}, timeout)
    except (urllib.error.URLError, OSError) as error:
        raise ImdsError(
            f"no EC2 instance metadata at {base} ({getattr(error, 'reason', error)}): not an EC2 instance, "
            "IMDS disabled, or the PUT hop limit is 1 inside a container; set aws_instance_id for this "
            "host in the inventory instead") from None

    def get(path):
        return _request(base + META + path, "GET", {"X-aws-ec2-metadata-token": token}, timeout)

    try:
        zone = get("placement/availability-zone")
        interfaces = []
        for mac in get("network/interfaces/macs/").split():
            mac = mac.rstrip("/")
            prefix = f"network/interfaces/macs/{mac}/"
            interfaces.append({"mac": mac, "interface_id": get(prefix + "interface-id"),
                               "device_number": int(get(prefix + "device-number"))})
        return {"instance_id": get("instance-id"), "availability_zone": zone, "region": _region(get, zone),
                "interfaces": sorted(interfaces, key=lambda nic: nic["device_number"])}
    except (urllib.error.URLError, OSError, ValueError) as error:
        raise ImdsError(f"EC2 instance metadata at {base} answered the token but not the data: {error}") from None
