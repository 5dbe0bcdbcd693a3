"""What `ncclkit check` asks from one host: do its peers' host-name addresses answer a ping, does
a TCP connection to the rendezvous open, (on the master) does a process already hold the rendezvous port,
does a packet that fills the cluster NIC's MTU reach the ring neighbours' cluster addresses, do new
TCP connections reach ports of the neighbours' ephemeral range, where Gloo's and NCCL's listeners bind,
and which interface the route to each of those addresses leaves by.

Standard library only, and runnable as a script (`python3 check_probe.py JSON`, or its text through
`python3 -c`): nccl_preflight runs it through `raw`, because a module run costs every host about
0.3 s of CPU for AnsiballZ's imports before any work, which on a large check is most of its time.
The nccl_check module's probe step imports it.
"""

import errno
import json
import os
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor


def ping(address, timeout=1.0, size=None):
    """True when a reply came, False when none did, None when there is no ping to ask. Unpinned:
    the kernel's route to the address decides, as it does for torch and Gloo. size: the payload of
    echoes sent with Don't Fragment (`-M do -s`), to ask whether a packet that fills the NIC's MTU
    gets through; then None also when ping cannot send such echoes (busybox's has no -M)."""
    # Up to five echoes in the time allowed; the first reply ends it.
    argv = ["ping", "-n", "-q", "-c", "1", "-i", "0.2", "-w", str(max(1, int(round(timeout))))]
    if size:
        argv += ["-M", "do", "-s", str(int(size))]
    try:
        code = subprocess.run(argv + [address], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=timeout + 5, check=False).returncode
    except FileNotFoundError:
        return None
    except subprocess.TimeoutExpired:
        return False
    if size:
        return True if code == 0 else False if code == 1 else None
    return code == 0


def path_mtu(peers, mtu, timeout, pool):
    """{peer: {address, mtu, small, large}}: a small echo to each peer's cluster address, and one that
    fills this host's MTU with Don't Fragment set. A small reply without a large one is a path that
    drops frames of this MTU without saying so (no ICMP "fragmentation needed")."""
    if not mtu or int(mtu) <= 576:
        return {}
    asked = {peer: (address, pool.submit(ping, address, timeout), pool.submit(ping, address, timeout, int(mtu) - 28))
             for peer, address in (peers or {}).items() if address}
    return {peer: {"address": address, "mtu": int(mtu), "small": small.result(), "large": large.result()}
            for peer, (address, small, large) in asked.items()}


def route_dev(address):
    """The interface the kernel's route to `address` leaves by (`ip -o route get`), None when unknown."""
    try:
        done = subprocess.run(["ip", "-o", "route", "get", address], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    words = done.stdout.decode("utf-8", "replace").split()
    return words[words.index("dev") + 1] if done.returncode == 0 and "dev" in words[:-1] else None


def peer_ports(source, peers, ports, timeout, pool):
    """{peer: {port: connect outcome}} for ports of each peer's ephemeral range. Nothing needs to
    listen there: "refused" (the peer's TCP stack answered) proves its firewall let the connection
    in, as "open" does; "timeout" is a drop and "unreachable" a reject (ICMP admin-prohibited)."""
    asked = {peer: {port: pool.submit(connect, source, address, port, timeout) for port in (ports or {}).get(peer, [])}
             for peer, address in (peers or {}).items() if address}
    return {peer: {str(port): future.result() for port, future in futures.items()}
            for peer, futures in asked.items() if futures}


def connect(source, address, port, timeout=1.0):
    """How a TCP connection from `source` (any address when empty) to address:port went: "open",
    "refused" (the host answered, nothing listens), "timeout", "unreachable" or "error: ..."."""
    conn = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    conn.settimeout(timeout)
    try:
        if source:
            conn.bind((source, 0))
        conn.connect((address, int(port)))
        return "open"
    except socket.timeout:
        return "timeout"
    except ConnectionRefusedError:
        return "refused"
    except OSError as error:
        if error.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH):
            return "unreachable"
        return "error: {}".format(error.strerror or error)
    finally:
        conn.close()


def _listening_inodes(port):
    """Socket inodes listening on TCP `port` (any address), from /proc/net/tcp and tcp6."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as stream:
                rows = stream.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            # local address "ADDR:PORT" in hex; state 0A is LISTEN
            if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == int(port):
                inodes.add(fields[9])
    return inodes


def holder(port):
    """Who listens on TCP `port` on this host: "COMMAND (pid N)", "a process" when its pid cannot be
    read, None when nothing listens. Before training nothing should: a listener is a stale process."""
    inodes = _listening_inodes(port)
    if not inodes:
        return None
    wanted = {"socket:[{}]".format(inode) for inode in inodes}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            for fd in os.listdir("/proc/{}/fd".format(pid)):
                if os.readlink("/proc/{}/fd/{}".format(pid, fd)) in wanted:
                    with open("/proc/{}/cmdline".format(pid), "rb") as stream:
                        command = stream.read().replace(b"\0", b" ").decode(errors="replace").strip()
                    return "{} (pid {})".format(command[:120] or "?", pid)
        except OSError:
            continue
    return "a process"


def probe(source, targets, master, timeout=1.0, path=None):
    """{"hostname": {peer: ping outcome of its first address, False without one}, "master": the
    connection's outcome, None on the master itself or without a rendezvous, "master_holder": on the
    master, who already listens on the rendezvous port (None: nobody), "path": path_mtu's answer for
    path {"mtu": this host's cluster NIC's, "peers": {peer: cluster address}, "ports": {peer: [port]}}
    (empty without one), "ports": peer_ports' answer for the same peers, "routes": {peer: {address,
    dev: the interface the route to its cluster address leaves by}}}."""
    path = path or {}
    workers = 2 * len(targets) + 2 + 3 * len(path.get("peers") or {}) + sum(len(v) for v in (path.get("ports") or {}).values())
    with ThreadPoolExecutor(max_workers=max(1, min(64, workers))) as pool:
        pings = {name: pool.submit(ping, addresses[0], timeout) if addresses else None
                 for name, addresses in targets.items()}
        on_master = not master.get("addr") or master["addr"] == source
        opened = None if on_master else pool.submit(connect, source, master["addr"], master["port"], timeout)
        paths = path_mtu(path.get("peers"), path.get("mtu"), timeout, pool)
        ports = peer_ports(source, path.get("peers"), path.get("ports"), timeout, pool)
        routes = {peer: (address, pool.submit(route_dev, address))
                  for peer, address in (path.get("peers") or {}).items() if address}
        return {"routes": {peer: {"address": address, "dev": future.result()} for peer, (address, future) in routes.items()},
                "hostname": {name: (future.result() if future else False) for name, future in pings.items()},
                "master": opened.result() if opened else None,
                "master_holder": holder(master["port"]) if master.get("addr") and on_master else None,
                "path": paths, "ports": ports}


def main(argv):
    request = json.loads(argv[1])
    probes = probe(request.get("source", ""), request.get("targets", {}), request.get("master") or {},
                   float(request.get("timeout", 1.0)), request.get("path") or {})
    sys.stdout.write(json.dumps({"probes": probes}) + "\n")


if __name__ == "__main__":
    main(sys.argv)
