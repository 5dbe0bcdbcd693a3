"""Network namespaces, bridges and veths of a lab, through batched iproute2 calls.

One `ip -batch` on the host makes every namespace, both bridges and every veth pair (the inner
end created directly in its namespace); then one `ip -n NS -batch` per namespace, all at once,
sets addresses and routes inside (moving a link between namespaces would drop its addresses).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from ncclkit.lab.errors import LabError
from ncclkit.lab.plan import LabPlan, MemberPlan, is_lab_link, is_lab_netns

NETNS_DIR = Path("/run/netns")
SYS_NET = Path("/sys/class/net")
KILL_WAIT_S = 10
VETH_WAIT_S = 3


def run_batch(lines: list[str], netns: str | None = None, force: bool = False) -> None:
    result = subprocess.run(_batch_argv(netns, force), input="\n".join(lines) + "\n",
                            capture_output=True, text=True, check=False)
    if result.returncode != 0 and not force:
        raise LabError(f"ip -batch{' in ' + netns if netns else ''} failed: "
                       f"{_first_line(result.stderr)}")


def _batch_argv(netns: str | None, force: bool) -> list[str]:
    return ["ip", *(["-n", netns] if netns else []), *(["-force"] if force else []), "-batch", "-"]


def _first_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else "(no message)"


def host_batch(plan: LabPlan) -> list[str]:
    """Namespaces, bridges and veth pairs, as seen from the host."""
    pub, priv, mtu = plan.public_bridge, plan.private_bridge, plan.mtu
    lines = [f"netns add {member.netns}" for member in plan.members]
    lines += [
        f"link add {pub} type bridge",
        f"link add {priv} mtu {mtu} type bridge",
        # No IPv6 link-local addresses: the lab talks IPv4 only and stays quiet otherwise.
        f"link set {pub} addrgenmode none",
        f"link set {priv} addrgenmode none",
        f"addr add {plan.controller_ip}/24 dev {pub}",   # the host has no private address
    ]
    for member in plan.members:
        if member.public_link:
            lines += [
                f"link add {member.public_link} type veth peer name eth0 netns {member.netns}",
                f"link set {member.public_link} addrgenmode none master {pub} up",
                # Isolated ports reach the bridge (the controller) but not each other,
                # like a cloud's public side. Same as `bridge link set dev X isolated on`.
                f"link set {member.public_link} type bridge_slave isolated on",
            ]
        lines += [
            f"link add {member.private_link} mtu {mtu} type veth peer name eth1 mtu {mtu} "
            f"netns {member.netns}",
            f"link set {member.private_link} addrgenmode none master {priv} up",
        ]
    if plan.gateway:
        # Not isolated: the gateway reaches every node's eth0, as AutoDL's SSH gateway does.
        lines += [f"netns add {plan.gateway_netns}",
                  f"link add {plan.gateway_link} type veth peer name eth0 netns {plan.gateway_netns}",
                  f"link set {plan.gateway_link} addrgenmode none master {pub} up"]
    lines += [f"link set {pub} up", f"link set {priv} up"]
    return lines


def gateway_batch(plan: LabPlan) -> list[str]:
    return ["link set lo up", "link set eth0 addrgenmode none",
            f"addr add {plan.gateway_ip}/24 dev eth0", "link set eth0 up"]


def gateway_ruleset(plan: LabPlan) -> str:
    """DNAT of each node's gateway port to its sshd, and masquerade so that the node answers the
    gateway (which un-NATs the reply), in the gateway's namespace only: the host's own firewall
    is never touched."""
    forwards = "\n".join(f"    tcp dport {plan.gateway_port(node)} dnat to {node.public_ip}:22"
                         for node in plan.nodes)
    return ("table ip ncclkit_lab_gateway {\n"
            "  chain prerouting {\n    type nat hook prerouting priority dstnat; policy accept;\n"
            f"{forwards}\n  }}\n"
            "  chain postrouting {\n    type nat hook postrouting priority srcnat; policy accept;\n"
            "    oifname \"eth0\" masquerade\n  }\n}\n")


def start_gateway(plan: LabPlan) -> None:
    run_batch(gateway_batch(plan), plan.gateway_netns)
    setup = ("echo 1 > /proc/sys/net/ipv4/ip_forward && nft -f -")
    result = subprocess.run(["ip", "netns", "exec", plan.gateway_netns, "sh", "-c", setup],
                            input=gateway_ruleset(plan), capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise LabError(f"setting up the SSH gateway in {plan.gateway_netns} failed: "
                       f"{_first_line(result.stderr)}")


def inside_batch(plan: LabPlan, member: MemberPlan) -> list[str]:
    """lo, eth0 (public, default route via the controller) and eth1 (private) of one namespace."""
    lines = ["link set lo up"]
    if member.public_ip:
        lines += [
            "link set eth0 addrgenmode none",
            # A /32, as a cloud's public address: the other nodes' public addresses are not
            # on eth0's network, so only eth1's network holds the peers (nccl_preflight's rule).
            f"addr add {member.public_ip}/32 dev eth0",
            "link set eth0 up",
            f"route add {plan.controller_ip} dev eth0 scope link",
        ]
        if plan.gateway:   # SSH arrives from the gateway, which must get its answers
            lines.append(f"route add {plan.gateway_ip} dev eth0 scope link")
    lines += [
        "link set eth1 addrgenmode none",
        f"addr add {member.private_ip}/24 dev eth1",
        "link set eth1 up",
    ]
    if member.public_ip:
        lines.append(f"route add default via {plan.controller_ip} dev eth0")
    return lines


def create(plan: LabPlan) -> None:
    run_batch(host_batch(plan))
    # Nodes reach the controller, never past it: no forwarding from the public bridge,
    # even on hosts that forward (docker sets ip_forward=1).
    Path(f"/proc/sys/net/ipv4/conf/{plan.public_bridge}/forwarding").write_text("0\n")
    Path(f"/proc/sys/net/ipv4/conf/{plan.private_bridge}/forwarding").write_text("0\n")
    running = []
    for member in plan.members:
        process = subprocess.Popen(_batch_argv(member.netns, False), stdin=subprocess.PIPE,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        process.stdin.write("\n".join(inside_batch(plan, member)) + "\n")
        process.stdin.close()
        running.append((member, process))
    failures = []
    for member, process in running:
        stderr = process.stderr.read()
        if process.wait() != 0:
            failures.append(f"{member.netns}: {_first_line(stderr)}")
    if failures:
        raise LabError(f"configuring the network inside the namespaces failed: {failures[0]}")
    if plan.gateway:
        start_gateway(plan)


def lab_namespaces(index: int) -> list[str]:
    try:
        return sorted(name for name in os.listdir(NETNS_DIR) if is_lab_netns(index, name))
    except FileNotFoundError:
        return []


def lab_links(index: int) -> list[str]:
    return sorted(name for name in os.listdir(SYS_NET) if is_lab_link(index, name))


def namespace_id(netns: str) -> tuple[int, int] | None:
    try:
        info = os.stat(NETNS_DIR / netns)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def process_namespace_id(pid: int) -> tuple[int, int] | None:
    try:
        info = os.stat(f"/proc/{pid}/ns/net")
    except OSError:
        return None   # gone, or a zombie (which has left its namespaces)
    return info.st_dev, info.st_ino


def process_pid_namespace(pid: int) -> tuple[int, int] | None:
    try:
        info = os.stat(f"/proc/{pid}/ns/pid")
    except OSError:
        return None
    return info.st_dev, info.st_ino


def namespace_pids(netns_names: list[str]) -> dict[str, list[int]]:
    """What `ip netns pids` answers, for several namespaces in one pass over /proc."""
    wanted = {ident: name for name in netns_names if (ident := namespace_id(name))}
    found: dict[str, list[int]] = {name: [] for name in netns_names}
    if not wanted:
        return found
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (name := wanted.get(process_namespace_id(int(entry)))):
            found[name].append(int(entry))
    return found


def kill_processes(netns_names: list[str]) -> None:
    """SIGKILL everything in these namespaces until nothing is left (sshd may fork meanwhile)."""
    deadline = time.monotonic() + KILL_WAIT_S
    while True:
        pids = [pid for pids in namespace_pids(netns_names).values() for pid in pids]
        if not pids:
            return
        if time.monotonic() > deadline:
            raise LabError(f"processes {pids[:5]} in the lab's namespaces would not die")
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.02)


def destroy(index: int) -> list[str]:
    """Remove every namespace and link of lab `index`, by name; returns what was there."""
    namespaces = lab_namespaces(index)
    found = namespaces + lab_links(index)
    kill_processes(namespaces)
    bridges = [name for name in found if _is_bridge(name)]
    if namespaces:
        run_batch([f"netns del {name}" for name in namespaces]
                  + [f"link del {name}" for name in bridges], force=True)
        # The kernel then dismantles the namespaces, veths and all, in one batch: much faster
        # than deleting veths one by one. Wait for that; whatever outlives it goes explicitly.
        deadline = time.monotonic() + VETH_WAIT_S
        while _ports(lab_links(index)) and time.monotonic() < deadline:
            time.sleep(0.01)
    links = lab_links(index)
    if links:   # veths first: each takes its inner end along
        run_batch([f"link del {name}" for name in sorted(links, key=_is_bridge)], force=True)
    left = lab_namespaces(index) + lab_links(index)
    if left:
        raise LabError(f"could not remove {', '.join(left)}")
    return found


def _is_bridge(name: str) -> bool:
    return name.endswith(("pub", "priv"))


def _ports(links: list[str]) -> list[str]:
    return [name for name in links if not _is_bridge(name)]
