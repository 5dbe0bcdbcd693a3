"""Known-hosts lines for the cluster from each host's own public host keys.

The role reads /etc/ssh/ssh_host_*_key.pub on every host over the already-authenticated Ansible
connection (never by scanning the network) and pins those keys for the host's expected names:
its inventory name, its cluster address and its hostname. Only a plain public key gets through:
a type of the allow-list, a base64 body that decodes to a key of that type, no known_hosts
marker (@cert-authority, @revoked) and no options; the comment is dropped. Names are host names
or IP addresses, never patterns (*, ?, !), lists or [host]:port forms.

Pure Python 3.8+ standard library.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
import struct

KEY_TYPES = (
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "ssh-rsa",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
)
_HOST_NAME = re.compile(r"(?=.{1,253}\Z)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
                        r"(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?")


class SshHostKeyError(ValueError):
    """A host key or a name that must not be pinned; the message names the file and the fix."""


def parse_host_key(text, source):
    """(type, base64 body) of one public host key file's text; SshHostKeyError otherwise."""
    lines = [line.strip() for line in str(text).splitlines()]
    lines = [line for line in lines if line and not line.startswith("#")]
    if len(lines) != 1:
        raise SshHostKeyError("{0} holds {1} keys, not one: a host key file holds one public key "
                              "(ssh-keygen -A writes them)".format(source, len(lines)))
    fields = lines[0].split()
    if fields[0].startswith("@"):
        raise SshHostKeyError("{0} starts with the known_hosts marker {1}: a host key file holds a plain public key, "
                              "never a CA or revocation line".format(source, fields[0][:40]))
    if fields[0] not in KEY_TYPES:
        raise SshHostKeyError("{0} starts with {1!r}, not a key type ({2}): options and other key types are not "
                              "pinned".format(source, fields[0][:40], ", ".join(KEY_TYPES)))
    if len(fields) < 2:
        raise SshHostKeyError("{0} has a key type but no key".format(source))
    body = fields[1]
    try:
        blob = base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        raise SshHostKeyError("{0}: the key is not base64".format(source))
    if len(blob) < 4:
        raise SshHostKeyError("{0}: the key is too short to be one".format(source))
    length = struct.unpack(">I", blob[:4])[0]
    if blob[4:4 + length] != fields[0].encode("ascii"):
        raise SshHostKeyError("{0}: the key's body is not a {1} key".format(source, fields[0]))
    return fields[0], body


def check_name(name):
    """The name as it goes into a known_hosts line; SshHostKeyError for anything else."""
    name = str(name).strip()
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        pass
    if not _HOST_NAME.fullmatch(name):
        raise SshHostKeyError("{0!r} is neither a host name nor an IP address, so it is not pinned as one: "
                              "use plain names in the inventory".format(name))
    return name


def known_hosts_lines(key_texts, names):
    """Sorted 'name,name,... type body' lines: each of a host's keys for all of its names.

    key_texts: {source (file path): text}; names: the host's names, empty ones and duplicates
    dropped. Raises SshHostKeyError on the first key or name that must not be pinned, or when
    there is no key at all."""
    checked = []
    for name in names:
        if name is None or not str(name).strip():
            continue
        name = check_name(name)
        if name not in checked:
            checked.append(name)
    if not checked:
        raise SshHostKeyError("no name to pin the host keys for")
    keys = sorted({parse_host_key(text, source) for source, text in sorted(key_texts.items())})
    if not keys:
        raise SshHostKeyError("no public host key (/etc/ssh/ssh_host_*_key.pub): install openssh-server "
                              "(it makes them) or run ssh-keygen -A")
    return ["{0} {1} {2}".format(",".join(checked), key_type, body) for key_type, body in keys]


def known_hosts_result(key_texts, names):
    """{"lines": [...], "error": ""} or {"lines": [], "error": "<the one line>"}, for a role to assert."""
    try:
        return {"lines": known_hosts_lines(key_texts, names), "error": ""}
    except SshHostKeyError as error:
        return {"lines": [], "error": str(error)}
