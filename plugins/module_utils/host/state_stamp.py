"""A role's state stamp on a host: what a converged run recorded, compared with the host as it is now.

A role that finished on a host records a stamp: the digest of its inputs (the role's settings and
the facts it built from), the host's state read live right after (file checksums, link MTUs, the
hash of the nftables ruleset) and the facts the role set. On the next run, when the inputs' digest
and the live state both match, the host is converged and the role's work can be skipped, its facts
restored from the stamp. Anything changed by hand (a file removed or edited, an MTU changed, the
ruleset flushed) makes the live state differ, and the role runs and repairs it.

Python 3.8+ standard library; runs on the host inside nccl_state_stamp.
"""

from __future__ import annotations

import hashlib
import json
import os
import re

STAMP_DIR = "/var/lib/ncclkit/state"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
IFNAME = re.compile(r"^[A-Za-z0-9_.:@-]{1,15}$")
FORMAT = 1
ABSENT = "absent"
NFT_TIMEOUT_S = 20


class StampError(ValueError):
    """A bad input: the message names it and the fix."""


def digest(value) -> str:
    """sha256 of `value` as canonical JSON (keys sorted): the same inputs give the same digest."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def stamp_path(name: str, folder: str = STAMP_DIR) -> str:
    if not isinstance(name, str) or not NAME.match(name):
        raise StampError(f"stamp name {name!r} is not a plain name: use letters, digits, '_', '.', '-'")
    return os.path.join(folder, f"{name}.json")


def file_state(path: str) -> str:
    """A file's content digest ("absent" if missing); a symlink also by where it points."""
    target = None
    try:
        target = os.readlink(path) if os.path.islink(path) else None
        hasher = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                hasher.update(block)
    except FileNotFoundError:
        return ABSENT
    except IsADirectoryError:
        return f"link:{target}:dir" if target is not None else "dir"
    except OSError as error:
        return f"unreadable:{error.errno}"
    return (f"link:{target}:" if target is not None else "") + hasher.hexdigest()


def link_mtu(ifname: str, sys_class_net: str = "/sys/class/net") -> int | None:
    if not IFNAME.match(ifname or ""):
        raise StampError(f"interface name {ifname!r} is not a Linux interface name")
    try:
        with open(os.path.join(sys_class_net, ifname, "mtu")) as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return None


def nft_ruleset(run) -> str:
    """The digest of `nft -s list ruleset` (-s: no counters, which change with every packet), or
    why there is none. `run(argv, timeout)` -> (rc, stdout, stderr) runs a host command."""
    rc, out, err = run(["nft", "-s", "list", "ruleset"], NFT_TIMEOUT_S)
    if rc != 0:
        return f"unread:rc={rc}"
    return hashlib.sha256(out.encode()).hexdigest()


def live_state(files=(), interfaces=(), nft=False, run=None) -> dict:
    """The host's state as it is now, for the parts a stamp covers."""
    state = {"files": {path: file_state(path) for path in sorted(set(files))},
             "mtu": {name: link_mtu(name) for name in sorted(set(interfaces))}}
    if nft:
        state["nft"] = nft_ruleset(run)
    return state


def read_stamp(path: str) -> dict | None:
    """The recorded stamp, or None when there is none or it does not parse (then the role runs)."""
    try:
        with open(path) as handle:
            stamp = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(stamp, dict) or stamp.get("format") != FORMAT:
        return None
    return stamp


def judge(recorded: dict | None, inputs_digest: str, live: dict) -> tuple:
    """(converged, why not): converged only when the inputs and the live state match the record."""
    if recorded is None:
        return False, "no stamp recorded yet"
    if recorded.get("inputs") != inputs_digest:
        return False, "the inputs changed since the stamp"
    before = recorded.get("live") or {}
    for part in ("files", "mtu"):
        for key in sorted(set(before.get(part, {})) | set(live.get(part, {}))):
            if before.get(part, {}).get(key) != live.get(part, {}).get(key):
                return False, f"{'file' if part == 'files' else 'the MTU of'} {key} changed since the stamp"
    if before.get("nft") != live.get("nft"):
        return False, "the nftables ruleset changed since the stamp"
    return True, ""


def stamp_text(inputs_digest: str, live: dict, facts: dict) -> str:
    return json.dumps({"format": FORMAT, "inputs": inputs_digest, "live": live, "facts": facts},
                      sort_keys=True, indent=1) + "\n"
