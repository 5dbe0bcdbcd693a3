"""Which sysctl file decides a key at boot, and whether a file of ours may be deleted.

Pure Python 3.8+ standard library, for the nccl_port_range module. Both boot-time readers sort
the *.conf files of the sysctl.d directories by file name (a name in /etc hides the same name in
/run, /usr/local/lib, /usr/lib and /lib) and apply them in that order, the last setting winning:
systemd-sysctl reads /etc/sysctl.conf only through the 99-sysctl.conf link, and procps'
`sysctl --system` applies /etc/sysctl.conf after every sysctl.d file. So a file named to sort
last wins against every sysctl.d file, and nothing wins against /etc/sysctl.conf under procps.
"""

from __future__ import annotations

import os
from typing import Dict, List, Optional

# In the order a name hides the same name further down (systemd-sysctl and procps agree).
SYSCTL_DIRS = ("etc/sysctl.d", "run/sysctl.d", "usr/local/lib/sysctl.d", "usr/lib/sysctl.d", "lib/sysctl.d")
SYSCTL_CONF = "etc/sysctl.conf"
STAMP = "# ncclkit:"


def normal_key(key: str) -> str:
    return key.strip().lstrip("-").strip().replace("/", ".")


def normal_value(value: str) -> str:
    return " ".join(str(value).split())


def settings(text: str) -> List[tuple]:
    """[(line number, key, value, line)] of a sysctl file's assignments."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped[0] in "#;" or "=" not in stripped:
            continue
        key, value = stripped.split("=", 1)
        found.append((number, normal_key(key), normal_value(value), stripped))
    return found


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def boot_order(root: str = "/") -> List[str]:
    """The sysctl.d files in the order they are applied at boot (paths under `root`)."""
    chosen: Dict[str, str] = {}
    for directory in SYSCTL_DIRS:
        folder = os.path.join(root, directory)
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if name.endswith(".conf") and name not in chosen:
                chosen[name] = os.path.join(folder, name)
    return [chosen[name] for name in sorted(chosen)]


def later_setters(root: str, key: str, value: str, own_name: str) -> List[dict]:
    """Files applied after ours at boot that set `key` to another value: {file, line, text, value}.
    `file` is the path on the host (without `root`)."""
    key, value = normal_key(key), normal_value(value)
    conf = os.path.realpath(os.path.join(root, SYSCTL_CONF))
    files = [path for path in boot_order(root) if os.path.basename(path) > own_name
             and os.path.realpath(path) != conf]
    files.append(os.path.join(root, SYSCTL_CONF))
    found = []
    for path in files:
        for number, name, setting, line in settings(_read(path) or ""):
            if name == key and setting != value:
                found.append({"file": "/" + os.path.relpath(path, root), "line": number, "text": line,
                              "value": setting})
    return found


def is_ours(text: Optional[str], key: str) -> bool:
    """A file ncclkit wrote: stamped, or (written before the stamp) nothing but settings of `key`."""
    if text is None:
        return False
    if text.startswith(STAMP):
        return True
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return bool(lines) and all(not line.startswith(("#", ";")) and "=" in line
                               and normal_key(line.split("=", 1)[0]) == normal_key(key) for line in lines)


def conflict_message(key: str, value: str, own_path: str, conflicts: List[dict], variable: str) -> str:
    where = "; ".join(f"{item['file']} line {item['line']}: {item['text']}" for item in conflicts)
    why = ("`sysctl --system` applies /etc/sysctl.conf after every sysctl.d file"
           if any(item["file"] == "/" + SYSCTL_CONF for item in conflicts) else "it is read after ncclkit's file")
    last = conflicts[-1]["value"].split()
    return (f"{key} is set again after ncclkit's {own_path} ({where}): at boot that value wins ({why}), and "
            f"NCCL would listen on ports ncclkit's firewall rules do not admit. Nothing was changed. Fix: remove or "
            f"comment out that line, or set {variable} to [{', '.join(last)}] (wanted: {normal_value(value)})")
