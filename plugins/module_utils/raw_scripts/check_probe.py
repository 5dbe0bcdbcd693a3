"""What `ncclkit check` asks from one host: do its peers' host-name addresses answer a ping, and does
a TCP connection to the rendezvous open.

Standard library only, and runnable as a script (`python3 check_probe.py JSON`, or its text through
`python3 -c`): nccl_preflight runs it through `raw`, because a module run costs every host about
0.3 s of CPU for AnsiballZ's imports before any work, which on a large check is most of its time.
The nccl_check module's probe step imports it.
"""

import errno
import json
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor


def ping(address, timeout=1.0):
    """True when a reply came, False when none did, None when there is no ping to ask. Unpinned:
    the kernel's route to the address decides, as it does for torch and Gloo."""
    # Up to five echoes in the time allowed; the first reply ends it.
    argv = ["ping", "-n", "-q", "-c", "1", "-i", "0.2", "-w", str(max(1, int(round(timeout)))), address]
    try:
        return subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=timeout + 5, check=False).returncode == 0
    except FileNotFoundError:
        return None
    except subprocess.TimeoutExpired:
        return False


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


def probe(source, targets, master, timeout=1.0):
    """{"hostname": {peer: ping outcome of its first address, False without one}, "master": the
    connection's outcome, None on the master itself or without a rendezvous}."""
    with ThreadPoolExecutor(max_workers=max(1, min(32, len(targets) + 1))) as pool:
        pings = {name: pool.submit(ping, addresses[0], timeout) if addresses else None
                 for name, addresses in targets.items()}
        on_master = not master.get("addr") or master["addr"] == source
        opened = None if on_master else pool.submit(connect, source, master["addr"], master["port"], timeout)
        return {"hostname": {name: (future.result() if future else False) for name, future in pings.items()},
                "master": opened.result() if opened else None}


def main(argv):
    request = json.loads(argv[1])
    probes = probe(request.get("source", ""), request.get("targets", {}), request.get("master") or {},
                   float(request.get("timeout", 1.0)))
    sys.stdout.write(json.dumps({"probes": probes}) + "\n")


if __name__ == "__main__":
    main(sys.argv)
