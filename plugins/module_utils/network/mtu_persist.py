"""Keep a NIC's MTU across reboots, in whatever configures the host's network.

Detected in this order (the first that manages the NIC wins): netplan (Ubuntu, and cloud-init's
50-cloud-init.yaml, which cloud-init rewrites: our own file sorts after it and overrides only the
MTU), systemd-networkd (a drop-in beside the .network file that matches the NIC), ifcfg (RHEL,
Alibaba Cloud Linux), Debian's ifupdown (the NIC's stanza) and NetworkManager (nmcli).
Pure functions over a root folder, so tests use fake trees; `plan_persist` returns the edits, the
nccl_mtu module applies them.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import re

NETPLAN_FILE = "etc/netplan/99-ncclkit-mtu.yaml"
HEADER = "# Written by ncclkit.cluster (cloud_alibaba): the cluster NIC's MTU.\n"


def _read(path):
    try:
        with open(path, encoding="utf-8") as stream:
            return stream.read()
    except OSError:
        return None


def netplan_ids(root: str, ifname: str) -> list:
    """Ids under `ethernets:` of netplan files that name `ifname` (by id, or match: name:)."""
    ids = []
    for path in sorted(glob.glob(os.path.join(root, "etc/netplan/*.yaml"))):
        if path.endswith(os.path.basename(NETPLAN_FILE)):
            continue
        text = _read(path) or ""
        for match in re.finditer(r"^(\s{2,})([A-Za-z0-9_.:@-]+):\s*$", text, re.MULTILINE):
            name = match.group(2)
            block = text[match.end():match.end() + 400]
            if name == ifname or re.search(rf"^\s+name:\s*[\"']?{re.escape(ifname)}[\"']?\s*$", block, re.MULTILINE):
                ids.append(name)
    return [name for name in ids if name not in ("ethernets", "network", "match")]


def networkd_file(root: str, ifname: str) -> str | None:
    for path in sorted(glob.glob(os.path.join(root, "etc/systemd/network/*.network"))):
        text = _read(path) or ""
        names = re.findall(r"^\s*Name\s*=\s*(.+)$", text, re.MULTILINE)
        if any(fnmatch.fnmatch(ifname, pattern) for line in names for pattern in line.split()):
            return path
    return None


def ifupdown_stanza(root: str, ifname: str) -> str | None:
    for path in [os.path.join(root, "etc/network/interfaces")] + sorted(
            glob.glob(os.path.join(root, "etc/network/interfaces.d/*"))):
        if re.search(rf"^\s*iface\s+{re.escape(ifname)}\s+inet\s", _read(path) or "", re.MULTILINE):
            return path
    return None


def plan_persist(root: str, ifname: str, mtu: int, nmcli: bool = False) -> dict:
    """{"manager": name, "files": {path: new text}}; manager "none"
    when nothing configures the NIC (then the MTU set now lasts until reboot, and the caller says so)."""
    ids = netplan_ids(root, ifname)
    if ids:
        body = "".join(f"    {name}:\n      mtu: {mtu}\n" for name in ids)
        return {"manager": "netplan",
                "files": {os.path.join(root, NETPLAN_FILE): HEADER + "network:\n  version: 2\n  ethernets:\n" + body}}
    network = networkd_file(root, ifname)
    if network:
        dropin = os.path.join(network + ".d", "ncclkit-mtu.conf")
        return {"manager": "systemd-networkd",
                "files": {dropin: HEADER + f"[Link]\nMTUBytes={mtu}\n"}}
    ifcfg = os.path.join(root, f"etc/sysconfig/network-scripts/ifcfg-{ifname}")
    text = _read(ifcfg)
    if text is not None:
        lines = [line for line in text.splitlines() if not re.match(r"^\s*MTU\s*=", line)]
        return {"manager": "ifcfg", "files": {ifcfg: "\n".join(lines + [f"MTU={mtu}"]) + "\n"}}
    stanza_file = ifupdown_stanza(root, ifname)
    if stanza_file:
        return {"manager": "ifupdown",
                "files": {stanza_file: _ifupdown_with_mtu(_read(stanza_file), ifname, mtu)}}
    if nmcli:   # the nccl_mtu module asks nmcli for the NIC's connection and modifies that
        return {"manager": "NetworkManager", "files": {}}
    return {"manager": "none", "files": {}}


def _ifupdown_with_mtu(text: str, ifname: str, mtu: int) -> str:
    """The file with `mtu N` in the NIC's stanza (replacing an older mtu line of that stanza)."""
    out, inside = [], False

    def close():   # the option goes after the stanza's last line, before blank lines
        at = len(out)
        while at > 0 and not out[at - 1].strip():
            at -= 1
        out.insert(at, f"    mtu {mtu}")

    for line in text.splitlines():
        if re.match(r"^\s*(iface|auto|allow-|source|mapping)\b", line):
            if inside:
                close()
            inside = re.match(rf"^\s*iface\s+{re.escape(ifname)}\s+inet\s", line) is not None
        elif inside and re.match(r"^\s*mtu\s+\d+", line):
            continue
        out.append(line)
    if inside:
        close()
    return "\n".join(out) + "\n"
