"""What nccl_profile reads on one host before it writes anything: the public SSH host keys, the
hostname, the SSH user's passwd entry and cluster key, whether an earlier version's block is in the
system's known_hosts, and the tuning nccl_validate kept for this hardware.

Standard library only, and runnable as a script (`python3 profile_host_read.py JSON`, or its text
through `python3 -c`): nccl_profile runs it through `raw`, one start of the host's Python where a
`getent`, a `find`, a `slurp` per key file, a `stat` and a `slurp` of the cluster key, a `stat` of
known_hosts and a `slurp` of the tuning were each a module run (about 0.3 s of CPU for AnsiballZ's
imports before any work). It only reads. It prints one JSON line: {"host_keys": {path: text},
"key_errors": [str], "hostname": str, "user": {"name", "uid", "gid", "home", "shell"} or null,
"cluster_key": the public cluster key's text or null, "legacy_block": bool, "autotune": text or
null (missing or unreadable: the role then tunes anew)}.
"""

import glob
import json
import os
import pwd
import socket
import sys

# A public key file is a line or two; anything larger is not one (and is not read whole).
MAX_KEY_BYTES = 64 * 1024
MAX_AUTOTUNE_BYTES = 1024 * 1024


def _text(path, limit, errors):
    """The file's text (None when it does not exist); an unreadable or oversized file is an error."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except FileNotFoundError:
        return None
    except OSError as error:
        errors.append("cannot read {0}: {1}".format(path, error.strerror or error))
        return None
    if len(data) > limit:
        errors.append("{0} is over {1} bytes: not read".format(path, limit))
        return None
    return data.decode("utf-8", "replace")


def _user(name):
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return None
    return {"name": entry.pw_name, "uid": entry.pw_uid, "gid": entry.pw_gid, "home": entry.pw_dir,
            "shell": entry.pw_shell}


def _hostname():
    try:
        with open("/proc/sys/kernel/hostname") as handle:
            return handle.read().strip()
    except OSError:
        return socket.gethostname()


def _has_line(path, line):
    try:
        with open(path, "rb") as handle:
            return any(text.rstrip(b"\r\n") == line.encode("utf-8") for text in handle)
    except OSError:
        return False


def read(request):
    """request: {"key_dir", "key_pattern", "user", "cluster_key_name" (a file in the user's .ssh),
    "legacy_known_hosts", "legacy_marker" (its block's first line), "autotune" (a path, or "" not to
    read one)}."""
    key_errors = []
    keys = {}
    for path in sorted(glob.glob(os.path.join(request["key_dir"], request["key_pattern"]))):
        if os.path.isfile(path):
            text = _text(path, MAX_KEY_BYTES, key_errors)
            if text is not None:
                keys[path] = text
    autotune = _text(request["autotune"], MAX_AUTOTUNE_BYTES, []) if request.get("autotune") else None
    user = _user(request["user"])
    cluster_key = None
    if user is not None and request.get("cluster_key_name"):
        cluster_key = _text(os.path.join(user["home"], ".ssh", request["cluster_key_name"] + ".pub"), MAX_KEY_BYTES,
                            key_errors)
    legacy_path = request.get("legacy_known_hosts")
    legacy = bool(legacy_path) and _has_line(legacy_path, request.get("legacy_marker", ""))
    return {"host_keys": keys, "key_errors": key_errors, "hostname": _hostname(), "user": user,
            "cluster_key": cluster_key, "legacy_block": legacy, "autotune": autotune}


def main(argv):
    sys.stdout.write(json.dumps(read(json.loads(argv[1])), sort_keys=True) + "\n")


if __name__ == "__main__":
    main(sys.argv)
