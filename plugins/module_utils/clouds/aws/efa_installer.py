"""The EFA installer archive's sha256 by release, as AWS publishes it.

Pure Python 3.8+ standard library. The nccl_efa module resolves the checksum the role checks the
archive against: the one the user set, else AWS's published value for that release where this
file carries it. A checksum here is copied from AWS's page, never computed or guessed.
"""

from __future__ import annotations

import re

# Copied from AWS's "Verify the EFA installer using a checksum" table:
# https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-verify.html
# (1.41.0's value is also the one AWS ParallelCluster's cookbook pins for that release.)
PUBLISHED_SHA256 = {
    "1.47.0": "2df4201e046833c7dc8160907bee7f52b76ff80ed147376a2d0ed8a0dd66b2db",
    "1.46.0": "8302bd7849afb95c903a875d7dcb6f85b3d7629e9a8b67d020031cfc6f4d0ee1",
    "1.45.1": "9aeb20c645135b6039cc08986d8f14e63280f7839e882a74df5e83627ffeaa17",
    "1.45.0": "25ba26a0877fe3317390dc126aad2f23e27fc461cf0b940004f032cb342fa539",
    "1.44.0": "f129a5b44a49d593d247e55a59eb9bcb57121566e1c2e42b832a4e794fa83d8a",
    "1.43.3": "6c470ebce254c7165347b5048895ac2996c88567271642297f4c597738300652",
    "1.43.2": "de15c5bdbc83b952afbde876110830c604ad0796680e5157c05f7c1979a41069",
    "1.43.1": "54211eda0c193138ee8ed09b5fb41c41fc76fe0a77935fa4ec8d989466342740",
    "1.43.0": "786df3458c499237be33bb8e50ffd4da7c18c20e254380ffc80fb90833d8cc73",
    "1.42.0": "4114fe612905ee05083ae5cb391a00a012510f3abfecc642d86c9a5ae4be9008",
    "1.41.0": "3506354cdfbe31ff552fe75f5d0d9bb7efd29cf79bd99457347d29c751c38f9f",
}
SHA256 = re.compile(r"[0-9a-fA-F]{64}")


def installer_sha256(version, given) -> str:
    """The sha256 to check the archive against: `given` when it is one, else the published value
    of `version` ("" when neither: the play then says what to set)."""
    given = str(given or "").strip()
    if SHA256.fullmatch(given):
        return given.lower()
    return PUBLISHED_SHA256.get(str(version or "").strip(), "")


def published_range() -> str:
    """The releases this file carries, for messages: "1.41.0 to 1.47.0"."""
    versions = sorted(PUBLISHED_SHA256, key=lambda v: tuple(int(p) for p in v.split(".")))
    return f"{versions[0]} to {versions[-1]}"
