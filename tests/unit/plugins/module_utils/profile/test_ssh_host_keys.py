"""Known-hosts lines from hosts' own public key files: only plain keys of allowed types, only
plain names, no markers or options (what ssh-keyscan output could carry unchecked)."""

import base64
import struct

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.profile.ssh_host_keys import (
    SshHostKeyError,
    known_hosts_lines,
    known_hosts_result,
    parse_host_key,
)


def key(key_type="ssh-ed25519", payload=b"\x00" * 32):
    blob = struct.pack(">I", len(key_type)) + key_type.encode() + struct.pack(">I", len(payload)) + payload
    return base64.b64encode(blob).decode()


ED25519 = key()
ECDSA = key("ecdsa-sha2-nistp256", b"\x04" * 65)


def test_each_key_is_pinned_for_every_name_without_its_comment():
    texts = {"/etc/ssh/ssh_host_ed25519_key.pub": f"ssh-ed25519 {ED25519} root@node1\n",
             "/etc/ssh/ssh_host_ecdsa_key.pub": f"ecdsa-sha2-nistp256 {ECDSA}\n"}
    assert known_hosts_lines(texts, ["node1", "198.19.40.11", "", "node1", None]) == [
        f"node1,198.19.40.11 ecdsa-sha2-nistp256 {ECDSA}",
        f"node1,198.19.40.11 ssh-ed25519 {ED25519}"]


@pytest.mark.parametrize("text, message", [
    (f"@cert-authority * ssh-ed25519 {ED25519}", "marker @cert-authority"),
    (f"@revoked * ssh-ed25519 {ED25519}", "marker @revoked"),
    (f'from="10.0.0.0/8" ssh-ed25519 {ED25519}', "not a key type"),
    (f"node9 ssh-ed25519 {ED25519}", "not a key type"),
    (f"ssh-dss {key('ssh-dss')}", "not a key type"),
    ("ssh-ed25519 not*base64", "not base64"),
    (f"ssh-ed25519 {key('ssh-rsa')}", "not a ssh-ed25519 key"),
    ("ssh-ed25519", "no key"),
    (f"ssh-ed25519 {ED25519}\nssh-ed25519 {ED25519}", "holds 2 keys"),
    ("", "holds 0 keys"),
])
def test_anything_but_one_plain_key_is_refused(text, message):
    with pytest.raises(SshHostKeyError, match=message):
        parse_host_key(text, "/etc/ssh/ssh_host_x_key.pub")


@pytest.mark.parametrize("name", ["*", "node?", "!node1", "a,b", "[node1]:2222", "node 1", "-oProxyCommand=x",
                                  "node1\n@revoked"])
def test_names_that_are_patterns_or_lists_are_refused(name):
    result = known_hosts_result({"k.pub": f"ssh-ed25519 {ED25519}"}, ["node1", name])
    assert result["lines"] == [] and "neither a host name nor an IP address" in result["error"]


def test_a_host_without_keys_says_how_to_get_them():
    assert "ssh-keygen -A" in known_hosts_result({}, ["node1"])["error"]


def test_ipv6_addresses_are_written_in_their_short_form():
    assert known_hosts_lines({"k.pub": f"ssh-ed25519 {ED25519}"}, ["fd00:0::1"]) == [f"fd00::1 ssh-ed25519 {ED25519}"]
