"""How the controller runs launch's host side on a host: real OpenSSH with the inventory's settings
(one ControlMaster connection per host, so the many short calls of a launch cost one handshake),
or, for `ansible_connection: local`, the controller's own shell. Nothing is installed on a host:
the host side (hostside.py, after diagnosis/forensics.py) goes over stdin on every call.

    argv = host_argv(host, "follow", [run_dir, ...], control_dir)
    payload = script_payload()            # what stdin must start with
"""

from __future__ import annotations

import hashlib
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from ncclkit.launch.hosts import LaunchHost
from ncclkit.paths import collection_root

# Reads the host side from stdin: a length line, then the code (the rest of stdin stays for it).
BOOT = ("import sys;b=sys.stdin.buffer;n=int(b.readline());"
        "exec(compile(b.read(n),'ncclkit-launch-host','exec'))")
# Where launch puts py-spy on a host that has none (hostside.TOOLS).
PY_SPY_HOME = "~/.cache/ncclkit/bin"
SSH_OPTIONS = ("-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-o", "ServerAliveInterval=5",
               "-o", "ServerAliveCountMax=3", "-o", "ControlMaster=auto", "-o", "ControlPersist=60")
UNREACHABLE_RC = 255  # ssh's own failure (connect, authentication)


def script_payload() -> bytes:
    """The host side's code: forensics.py loaded as the module `forensics`, then hostside.py."""
    forensics = (collection_root() / "plugins" / "module_utils" / "diagnosis" / "forensics.py").read_text()
    hostside = Path(__file__).with_name("hostside.py").read_text()
    loader = ("import types as _types\nforensics = _types.ModuleType('forensics')\n"
              f"exec(compile({forensics!r}, 'forensics.py', 'exec'), forensics.__dict__)\n")
    code = (loader + hostside).encode()
    return str(len(code)).encode() + b"\n" + code


def ssh_base(host: LaunchHost, control_dir: Path) -> list[str]:
    """ssh with the host's settings; the inventory's own options first (ssh keeps the first value)."""
    argv = ["ssh", *host.ssh_args, *SSH_OPTIONS, "-o", f"ControlPath={control_dir}/%C"]
    if host.port:
        argv += ["-p", str(host.port)]
    if host.key:
        argv += ["-i", host.key, "-o", "IdentitiesOnly=yes"]
    if host.user:
        argv += ["-l", host.user]
    return argv + ["--", host.address]


def host_argv(host: LaunchHost, mode: str, args: list[str], control_dir: Path) -> list[str]:
    """The argv that runs the host side's `mode` on `host` (its stdin must be script_payload() first)."""
    remote = [host.python, "-c", BOOT, mode, *args]
    if host.connection == "local":
        return remote
    return [*ssh_base(host, control_dir), " ".join(shlex.quote(part) for part in remote)]


def close_masters(hosts: list[LaunchHost], control_dir: Path) -> None:
    """End the ControlMaster connections launch opened (ControlPersist would keep them a minute)."""
    for host in hosts:
        if host.connection == "ssh":
            subprocess.run([*ssh_base(host, control_dir)[:-2], "-O", "exit", "--", host.address],
                           capture_output=True, timeout=10, check=False)


def local_py_spy() -> Path | None:
    """The controller's py-spy (beside this Python, else on PATH), to put on hosts without one."""
    beside = Path(sys.executable).with_name("py-spy")
    found = beside if beside.is_file() else (Path(shutil.which("py-spy")) if shutil.which("py-spy") else None)
    return found


def py_spy_install_argv(host: LaunchHost, control_dir: Path, digest: str) -> list[str]:
    """Copies py-spy (on stdin) to PY_SPY_HOME/py-spy on the host, owner-only; skipped when the same
    file (by its SHA-256) is there already."""
    script = (f"d={PY_SPY_HOME.replace('~', '$HOME', 1)}; mkdir -p -m 700 \"$d\" && "
              f"if [ -f \"$d/py-spy.sha256\" ] && [ \"$(cat \"$d/py-spy.sha256\")\" = {digest} ]; then cat >/dev/null; "
              f"else cat > \"$d/py-spy.tmp\" && chmod 700 \"$d/py-spy.tmp\" && mv \"$d/py-spy.tmp\" \"$d/py-spy\" && "
              f"echo {digest} > \"$d/py-spy.sha256\"; fi")
    if host.connection == "local":
        return ["sh", "-c", script]
    return [*ssh_base(host, control_dir), script]


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
