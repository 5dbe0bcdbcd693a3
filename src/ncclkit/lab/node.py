"""Starting each node's namespace holder, and telling whether it is alive.

The holder of a node is its sshd; the outsider's is `sleep infinity`. Each is started as
    setsid ip netns exec NS unshare --uts --mount --propagation private -- sh -c SETUP
where SETUP mounts the overlays, sets the hostname and execs the holder. setsid, ip netns exec,
unshare and sh all exec, so the pid the launcher's `$!` reports is the holder's own. One
launcher shell starts every holder in the background and exits, so they outlive `lab up` and
are nobody's child (no zombies in whoever called Lab.up).
"""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import time

from ncclkit.lab import netns, rootfs
from ncclkit.lab.errors import LabError
from ncclkit.lab.plan import LabPlan, MemberPlan
from ncclkit.lab.state import StateDir

READY_WAIT_S = 60
# A clean environment: the holder and what it starts owe nothing to the caller's venv.
HOLDER_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
              "LANG": "C.UTF-8"}


def holder_argv(state: StateDir, member: MemberPlan, sshd: str) -> list[str]:
    if member.is_outsider:
        return ["sleep", "infinity"]
    return [sshd, "-D", "-e", "-f", str(state.sshd_config)]


def in_container(plan: LabPlan, member: MemberPlan) -> bool:
    return plan.profile == "autodl" and not member.is_outsider


def launch_line(state: StateDir, plan: LabPlan, member: MemberPlan, sshd: str) -> str:
    holder = holder_argv(state, member, sshd)
    unshare = ["unshare", "--uts", "--mount", "--propagation", "private"]
    if in_container(plan, member):
        # AutoDL-like: sshd is PID 1 of its own PID namespace, and it and everything it starts
        # lack CAP_NET_ADMIN (gone from the bounding set, so no exec can regain it).
        unshare += ["--pid", "--fork", "--mount-proc"]
        holder = ["setpriv", "--bounding-set", "-net_admin", "--inh-caps", "-net_admin", "--", *holder]
    setup = rootfs.setup_script(state, plan, member, holder)
    argv = ["setsid", "ip", "netns", "exec", member.netns, *unshare, "--", "sh", "-c", setup]
    log = shlex.quote(str(state.log_file(member.name)))
    return f"{shlex.join(argv)} </dev/null >>{log} 2>&1 & echo $!"


def start_holders(state: StateDir, plan: LabPlan, sshd: str) -> dict[str, int]:
    """Start every member's holder; returns name -> pid (not yet ready)."""
    script = "\n".join(launch_line(state, plan, member, sshd) for member in plan.members)
    result = subprocess.run(["sh", "-c", script], capture_output=True, text=True,
                            env=HOLDER_ENV, cwd="/", check=False)
    pids = result.stdout.split()
    if result.returncode != 0 or len(pids) != len(plan.members):
        raise LabError(f"starting the nodes failed: {result.stderr.strip() or result.stdout}")
    started = {member.name: int(pid) for member, pid in zip(plan.members, pids, strict=True)}
    for member in plan.members:
        if in_container(plan, member):   # unshare --fork: the holder is its child, PID 1 inside
            started[member.name] = forked_child(started[member.name], state, member.name)
    return started


def forked_child(pid: int, state: StateDir, name: str) -> int:
    deadline = time.monotonic() + READY_WAIT_S
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as stream:
                children = stream.read().split()
        except OSError:
            raise LabError(f"{name} did not start: {log_tail(state, name)}") from None
        if children:
            return int(children[0])
        time.sleep(0.01)
    raise LabError(f"{name} did not start within {READY_WAIT_S} s: {log_tail(state, name)}")


def is_running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stream:
            # state is the field after "(comm)", and comm may hold spaces
            return stream.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def executable(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None


def holder_problem(member: MemberPlan, pid: int, sshd: str) -> str | None:
    """Why `pid` is not this member's holder, or None when it is."""
    if not is_running(pid):
        return f"{member.name}'s holder (pid {pid}) is not running"
    expected = os.path.realpath(sshd) if not member.is_outsider else None
    exe = executable(pid) or ""
    if (expected and exe != expected) or (not expected and os.path.basename(exe) != "sleep"):
        return f"{member.name}'s holder (pid {pid}) runs {exe or 'nothing'}"
    if netns.process_namespace_id(pid) != netns.namespace_id(member.netns):
        return f"{member.name}'s holder (pid {pid}) is not in {member.netns}"
    return None


def ssh_port_open(ip: str, timeout: float = 0.3, port: int = 22) -> bool:
    try:
        with socket.create_connection((ip, port), timeout=timeout):
            return True
    except OSError:
        return False


def wait_ready(state: StateDir, plan: LabPlan, pids: dict[str, int], sshd: str) -> None:
    """Poll until every sshd accepts on its public address and every holder is what it should be."""
    pending = list(plan.members)
    deadline = time.monotonic() + READY_WAIT_S
    while pending:
        still = []
        for member in pending:
            pid = pids[member.name]
            if not is_running(pid):
                raise LabError(f"{member.name} did not start: {log_tail(state, member.name)}")
            ready = (ssh_port_open(member.public_ip) if member.public_ip
                     else os.path.basename(executable(pid) or "") == "sleep")
            if ready and (problem := holder_problem(member, pid, sshd)):
                raise LabError(problem)
            if not ready:
                still.append(member)
        pending = still
        if pending:
            if time.monotonic() > deadline:
                names = ", ".join(member.name for member in pending)
                raise LabError(f"{names} not ready after {READY_WAIT_S} s: "
                               f"{log_tail(state, pending[0].name)}")
            time.sleep(0.02)


def wait_gateway(plan: LabPlan) -> None:
    """Every node answers through its port of the SSH gateway."""
    deadline = time.monotonic() + READY_WAIT_S
    pending = list(plan.nodes)
    while pending:
        pending = [member for member in pending
                   if not ssh_port_open(plan.gateway_ip, port=plan.gateway_port(member))]
        if pending and time.monotonic() > deadline:
            raise LabError(f"the SSH gateway {plan.gateway_ip} does not forward port "
                           f"{plan.gateway_port(pending[0])} to {pending[0].name}")
        if pending:
            time.sleep(0.05)


def log_tail(state: StateDir, name: str) -> str:
    try:
        lines = state.log_file(name).read_text(errors="replace").strip().splitlines()
    except OSError:
        lines = []
    return lines[-1] if lines else f"nothing in {state.log_file(name)}"
