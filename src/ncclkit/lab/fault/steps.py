"""The primitives a fault is made of, each done inside one lab node the way a real host has it.

Every `do_*` function changes one thing and returns the step that undoes it (a JSON-ready dict,
kept by the store); `undo(lab, step)` replays such a step. Nothing here is told apart from a real
host's state by a marker that product code could read: a rule in the node's own `inet filter`
table, `ip link`, `tc`, a route, an edited file, a listening process, a mount, a limit, a cgroup.
"""

from __future__ import annotations

import ipaddress
import os
import re
import shlex
import signal
import subprocess
from pathlib import Path

from ncclkit.lab.errors import LabError

NODE_NAME = re.compile(r"^node\d{1,3}$")
IFNAME = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")
NFT_RULE = re.compile(r"^[a-z0-9 .,:{}\-\"!=<>]+$")   # what the kinds build: no ; or $ or `
HANDLE = re.compile(r"# handle (\d+)")
CGROUP_ROOT = Path("/sys/fs/cgroup/memory")


def run(lab, node: str, argv: list[str], what: str, stdin: str | None = None) -> str:
    """argv inside `node`; its stdout, or LabError naming `what` failed and why."""
    done = lab.exec(node, argv, input=stdin, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        message = (done.stderr or done.stdout).strip().splitlines()
        raise LabError(f"{what} on {node} failed: {message[-1] if message else f'exit {done.returncode}'}")
    return done.stdout


# ---- nftables: a rule in the node's own inet filter table --------------------------------------
def do_nft_rule(lab, node: str, chain: str, rule: str) -> dict:
    """Add `rule` at the top of chain `chain` (input or output) of the node's `inet filter` table,
    creating the table and base chain (policy accept) when the node has none."""
    if chain not in ("input", "output") or not NFT_RULE.match(rule):
        raise LabError(f"refusing nft rule {rule!r} in chain {chain!r}")
    tables = run(lab, node, ["nft", "list", "tables"], "listing nftables tables")
    created_table = "table inet filter" not in tables
    chains = "" if created_table else run(lab, node, ["nft", "list", "table", "inet", "filter"], "reading inet filter")
    created_chain = f"chain {chain} " not in chains
    setup = ["add table inet filter"] if created_table else []
    if created_chain:
        setup.append(f"add chain inet filter {chain} {{ type filter hook {chain} priority 0; policy accept; }}")
    if setup:
        run(lab, node, ["nft", "-f", "-"], "creating the inet filter table", stdin="\n".join(setup) + "\n")
    echoed = run(lab, node, ["nft", "-a", "-e", "insert", "rule", "inet", "filter", chain, *rule.split()],
                 f"adding nft rule '{rule}'")
    found = HANDLE.search(echoed)
    if not found:
        raise LabError(f"nft did not echo the handle of rule '{rule}' on {node}: {echoed.strip()}")
    return {"op": "nft_rule", "node": node, "chain": chain, "handle": int(found.group(1)), "rule": rule,
            "created_table": created_table, "created_chain": created_chain}


def _undo_nft_rule(lab, step: dict) -> None:
    node = step["node"]
    if step["created_table"]:
        run(lab, node, ["nft", "delete", "table", "inet", "filter"], "deleting the inet filter table")
        return
    run(lab, node, ["nft", "delete", "rule", "inet", "filter", step["chain"], "handle", str(step["handle"])],
        "deleting the fault's nft rule")
    if step["created_chain"]:
        run(lab, node, ["nft", "delete", "chain", "inet", "filter", step["chain"]], "deleting the chain")


# ---- links, qdiscs and routes -------------------------------------------------------------------
def link_field(lab, node: str, ifname: str, name: str) -> str:
    text = run(lab, node, ["ip", "-o", "link", "show", "dev", ifname], f"reading {ifname}")
    if name == "up":
        flags = text.split("<", 1)[1].split(">", 1)[0].split(",")
        return "up" if "UP" in flags else "down"
    return text.split(f" {name} ", 1)[1].split()[0]


def do_link_down(lab, node: str, ifname: str) -> dict:
    _check_ifname(ifname)
    run(lab, node, ["ip", "link", "set", "dev", ifname, "down"], f"ip link set {ifname} down")
    return {"op": "link_up", "node": node, "ifname": ifname}


def _undo_link_up(lab, step: dict) -> None:
    run(lab, step["node"], ["ip", "link", "set", "dev", step["ifname"], "up"], f"ip link set {step['ifname']} up")


def do_mtu(lab, node: str, ifname: str, mtu: int) -> dict:
    _check_ifname(ifname)
    old = int(link_field(lab, node, ifname, "mtu"))
    run(lab, node, ["ip", "link", "set", "dev", ifname, "mtu", str(int(mtu))], f"setting {ifname}'s MTU")
    return {"op": "mtu", "node": node, "ifname": ifname, "mtu": old}


def _undo_mtu(lab, step: dict) -> None:
    run(lab, step["node"], ["ip", "link", "set", "dev", step["ifname"], "mtu", str(step["mtu"])],
        f"restoring {step['ifname']}'s MTU")


def do_qdisc(lab, node: str, ifname: str, qdisc: list[str]) -> dict:
    """A root qdisc (tbf, netem) on the node's `ifname`; undone by deleting the root qdisc."""
    _check_ifname(ifname)
    run(lab, node, ["tc", "qdisc", "replace", "dev", ifname, "root", *qdisc], f"tc qdisc {qdisc[0]} on {ifname}")
    return {"op": "qdisc", "node": node, "ifname": ifname}


def _undo_qdisc(lab, step: dict) -> None:
    run(lab, step["node"], ["tc", "qdisc", "del", "dev", step["ifname"], "root"], "deleting the root qdisc")


def qdisc_kind_works(lab, node: str, kind: str) -> bool:
    """Whether this kernel has qdisc `kind` (netem is a module some kernels lack)."""
    done = lab.exec(node, ["tc", "qdisc", "add", "dev", "lo", "root", kind], capture_output=True, text=True)
    if done.returncode == 0:
        lab.exec(node, ["tc", "qdisc", "del", "dev", "lo", "root"], capture_output=True)
    return done.returncode == 0


def do_route(lab, node: str, destination: str, via: str, ifname: str) -> dict:
    ipaddress.ip_network(destination)
    ipaddress.ip_address(via)
    _check_ifname(ifname)
    run(lab, node, ["ip", "route", "add", destination, "via", via, "dev", ifname], f"adding route {destination}")
    return {"op": "route", "node": node, "destination": destination, "via": via, "ifname": ifname}


def _undo_route(lab, step: dict) -> None:
    run(lab, step["node"], ["ip", "route", "del", step["destination"], "via", step["via"], "dev", step["ifname"]],
        f"deleting route {step['destination']}")


# ---- files: an edit kept whole, restored whole --------------------------------------------------
def stash_dir(lab, node: str) -> Path:
    return lab.state_dir.path / "fault" / "stash" / node


def do_edit(lab, node: str, path: str, edit) -> dict:
    """Replace the node's file `path` with edit(old text or None); None from `edit` removes it.
    The old file is kept in the lab's state dir and put back by undo."""
    if not path.startswith("/") or ".." in path.split("/"):
        raise LabError(f"refusing to edit {path!r}")
    old = lab.exec(node, ["cat", path], capture_output=True, text=True)
    existed = old.returncode == 0
    mode = run(lab, node, ["stat", "-c", "%a", path], f"reading {path}'s mode").strip() if existed else "644"
    stash = stash_dir(lab, node)
    stash.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = path.strip("/").replace("/", "__")
    if existed:
        (stash / key).write_text(old.stdout)
    new = edit(old.stdout if existed else None)
    if new is None:
        run(lab, node, ["rm", "-f", "--", path], f"removing {path}")
    else:
        _write(lab, node, path, new, mode)
    return {"op": "edit", "node": node, "path": path, "existed": existed, "mode": mode, "stash": key}


def _write(lab, node: str, path: str, text: str, mode: str) -> None:
    script = f"cat > {shlex.quote(path)} && chmod {int(mode, 8):o} {shlex.quote(path)}"
    run(lab, node, ["sh", "-c", script], f"writing {path}", stdin=text)


def _undo_edit(lab, step: dict) -> None:
    node, path = step["node"], step["path"]
    if step["existed"]:
        _write(lab, node, path, (stash_dir(lab, node) / step["stash"]).read_text(), step["mode"])
    else:
        run(lab, node, ["rm", "-f", "--", path], f"removing {path}")


# ---- processes, mounts, limits, cgroups ---------------------------------------------------------
def do_listener(lab, node: str, address: str, port: int) -> dict:
    """A real process listening on address:port in the node (what a crashed job's survivor is)."""
    ipaddress.ip_address(address)
    code = ("import socket,time\ns=socket.socket()\ns.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n"
            f"s.bind(({address!r},{int(port)}))\ns.listen(8)\nprint('listening',flush=True)\n"
            "while True: time.sleep(3600)\n")
    process = subprocess.Popen(lab.command(node, ["python3", "-c", code]), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    line = process.stdout.readline()
    if "listening" not in line:
        process.kill()
        raise LabError(f"the stale listener on {node} {address}:{port} did not start: {process.stderr.read().strip()}")
    return {"op": "kill", "node": node, "pid": process.pid, "what": f"python3 listening on {address}:{port}"}


def _undo_kill(lab, step: dict) -> None:
    pid = step["pid"]
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as stream:
            if b"python3" not in stream.read():
                return   # gone, and the pid reused: nothing of ours to end
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (OSError, ChildProcessError):
        pass


def do_shm_size(lab, node: str, mib: int) -> dict:
    """A `mib` MiB tmpfs mounted over the node's /dev/shm (as a container's --shm-size makes it);
    undone by unmounting it, which shows the old one again, contents and all."""
    run(lab, node, ["mount", "-t", "tmpfs", "-o", f"size={int(mib)}m,mode=1777,nosuid,nodev", "shm", "/dev/shm"],
        "mounting a small /dev/shm")
    return {"op": "shm_size", "node": node, "mib": int(mib)}


def _undo_shm_size(lab, step: dict) -> None:
    options = run(lab, step["node"], ["findmnt", "-n", "-o", "OPTIONS", "/dev/shm"], "reading /dev/shm")
    if f"size={step['mib'] * 1024}k" not in options.strip().splitlines()[-1]:
        raise LabError(f"/dev/shm on {step['node']} is no longer the fault's {step['mib']} MiB mount: left alone")
    run(lab, step["node"], ["umount", "/dev/shm"], "unmounting the small /dev/shm")


def do_memlock(lab, node: str, kib: int) -> dict:
    """`ulimit -l` of the node's sshd (so of every login and job), as a unit's LimitMEMLOCK sets it."""
    pid = lab.node(node).pid
    done = subprocess.run(["prlimit", "--pid", str(pid), "--memlock", "--raw", "--noheadings", "-o", "SOFT,HARD"],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise LabError(f"reading {node}'s memlock limit failed: {done.stderr.strip()}")
    soft, hard = done.stdout.split()
    subprocess.run(["prlimit", "--pid", str(pid), f"--memlock={int(kib) * 1024}:{hard}"], check=True)
    return {"op": "memlock", "node": node, "pid": pid, "soft": soft, "hard": hard}


def _undo_memlock(lab, step: dict) -> None:
    soft, hard = (str(v) if str(v).isdigit() else "unlimited" for v in (step["soft"], step["hard"]))
    subprocess.run(["prlimit", "--pid", str(step["pid"]), f"--memlock={soft}:{hard}"], check=False)


def do_memory_cgroup(lab, node: str, mib: int) -> dict:
    """The node under a memory limit of `mib` MiB, as a container runtime sets one: its holder (sshd)
    and every process under it (an SSH master connection kept open included) join a memory cgroup, so
    every login and job on the node is in it, and the kernel OOM-kills the largest of them when they
    outgrow it. Swap is off for the cgroup, so the limit kills rather than pages. Undone by moving what
    is still in the cgroup back to the cgroup the holder came from, and removing it."""
    if not CGROUP_ROOT.is_dir():
        raise LabError(f"{CGROUP_ROOT} is missing: this host has no cgroup v1 memory controller")
    holder = lab.node(node).pid
    came_from = _memory_cgroup(holder)
    path = CGROUP_ROOT / f"ncclkit-lab{lab.index}-{node}"
    path.mkdir(exist_ok=True)
    (path / "memory.swappiness").write_text("0\n")
    (path / "memory.limit_in_bytes").write_text(f"{int(mib) << 20}\n")
    for pid in [holder] + _descendants(holder):
        _join(path, pid)
    return {"op": "cgroup", "node": node, "path": str(path), "came_from": came_from}


def _undo_cgroup(lab, step: dict) -> None:
    path = Path(step["path"])
    if path.parent != CGROUP_ROOT or not path.name.startswith("ncclkit-lab"):
        raise LabError(f"refusing to remove {path}")
    if not path.exists():
        return
    back = (CGROUP_ROOT / step.get("came_from", "/").lstrip("/")).resolve()
    if not back.is_relative_to(CGROUP_ROOT) or not back.is_dir():
        back = CGROUP_ROOT
    for pid in (path / "cgroup.procs").read_text().split():
        _join(back, int(pid))
    path.rmdir()


def _memory_cgroup(pid: int) -> str:
    """The memory cgroup `pid` is in ("/" without one)."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        number, controllers, where = line.split(":", 2)
        if "memory" in controllers.split(","):
            return where
    return "/"


def _descendants(root: int) -> list[int]:
    """Every process under `root`, by the parent pids in /proc/PID/stat."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue   # ended meanwhile
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def _join(cgroup: Path, pid: int) -> None:
    try:
        (cgroup / "cgroup.procs").write_text(f"{pid}\n")
    except (ProcessLookupError, FileNotFoundError):
        pass   # ended meanwhile


UNDO = {"nft_rule": _undo_nft_rule, "link_up": _undo_link_up, "mtu": _undo_mtu, "qdisc": _undo_qdisc,
        "route": _undo_route, "edit": _undo_edit, "kill": _undo_kill, "shm_size": _undo_shm_size,
        "memlock": _undo_memlock, "cgroup": _undo_cgroup}


def undo(lab, step: dict) -> None:
    if step.get("op") not in UNDO or not NODE_NAME.match(str(step.get("node", ""))):
        raise LabError(f"unknown undo step {step!r} in the fault record")
    UNDO[step["op"]](lab, step)


def _check_ifname(ifname: str) -> None:
    if not IFNAME.match(ifname):
        raise LabError(f"bad interface name {ifname!r}")
