"""`ncclkit check`'s decisions: what one host's view of the cluster predicts, as findings.

A finding has the shape `ncclkit diagnose` uses: {"code", "severity", "host", "rank", "cause",
"fix", "evidence", "consequence_of"}. Severities: "error" (training would hang or fail: the
check fails), "warning" (works, but fragile or slow), "info". docs/check.md lists every code.
"""

from __future__ import annotations

from typing import Dict, List, Optional

from ansible_collections.ncclkit.cluster.plugins.module_utils.host.container import SHM_ADVISED, shm_required_bytes

RDMA_TRANSPORTS = ("ib", "efa", "erdma")
SHM_MIN = SHM_ADVISED        # below 1 GiB: DataLoader workers and busy NCCL jobs run out (a warning)
MEMLOCK_RDMA_MIN_KIB = 64 << 20   # RDMA registers GPU and host buffers: anything short of huge fails


def finding(code, severity, host, cause, fix, evidence=(), consequence_of=None, rank=None) -> dict:
    return {"code": code, "severity": severity, "host": host, "rank": rank, "cause": cause,
            "fix": fix, "evidence": list(evidence), "consequence_of": consequence_of}


def _pins(value: str, ifname: str) -> Optional[bool]:
    """Whether a *_SOCKET_IFNAME value selects `ifname` (None: an exclusion list, not judged)."""
    value = value.strip()
    if not value or value.startswith("^"):
        return None
    names = [name for name in value.lstrip("=").split(",") if name]
    if value.startswith("="):
        return ifname in names
    return any(ifname.startswith(name) for name in names)


def _hostname_bad(me: str, view: dict, unreached_by: List[str]) -> bool:
    addresses = view.get("resolved") or []
    return bool(unreached_by) or not addresses or addresses[0].startswith("127.")


def host_findings(me: str, hosts: Dict[str, dict], unreached_by: List[str]) -> List[dict]:
    """Findings about `me` itself: hostname, socket interfaces, /dev/shm, memlock, GPU health."""
    view = hosts[me]
    cluster_ip, ifname = view.get("cluster_ip", ""), view.get("cluster_ifname", "")
    resolved = view.get("resolved") or []
    multi = len(hosts) > 1
    out = []
    hostname = view.get("hostname", me)
    if multi and not resolved:
        out.append(finding(
            "hostname_unresolvable", "error", me,
            f"{hostname} does not resolve on {me}: torch and Gloo look up the host's own name",
            f"add '{cluster_ip} {hostname}' to /etc/hosts on {me}", [f"getaddrinfo({hostname!r}) failed"]))
    elif multi and resolved[0].startswith("127."):
        out.append(finding(
            "hostname_loopback", "error" if not _all_pinned(view, "GLOO_SOCKET_IFNAME") else "warning", me,
            f"{hostname} resolves to {resolved[0]} (loopback) on {me}: an unpinned Gloo binds there "
            "and the other nodes can never connect",
            f"pin Gloo and NCCL to the cluster NIC (GLOO_SOCKET_IFNAME={ifname}, NCCL_SOCKET_IFNAME={ifname}: "
            f"run the nccl_profile role) or map {hostname} to {cluster_ip} in /etc/hosts",
            [f"getaddrinfo({hostname!r}) -> {', '.join(resolved)}"]))
    elif multi and unreached_by:
        gloo_ok = _all_pinned(view, "GLOO_SOCKET_IFNAME")
        out.append(finding(
            "hostname_unreachable", "warning" if gloo_ok else "error", me,
            f"{hostname} resolves to {resolved[0]} on {me}, which {', '.join(sorted(unreached_by))} cannot reach"
            + (": harmless while Gloo and NCCL are pinned to the cluster NIC and MASTER_ADDR is an address"
               if gloo_ok else ": an unpinned Gloo binds to that address and the job hangs at the rendezvous"),
            f"pin Gloo and NCCL to the cluster NIC (GLOO_SOCKET_IFNAME={ifname}, NCCL_SOCKET_IFNAME={ifname}: "
            f"run the nccl_profile role, start jobs with ncclkit-torchrun) and use MASTER_ADDR={cluster_ip}, "
            "never the host name",
            [f"getaddrinfo({hostname!r}) -> {', '.join(resolved)}",
             f"no ping reply from {resolved[0]} on {', '.join(sorted(unreached_by))}",
             f"cluster address {cluster_ip} ({ifname})"]))
    if multi:
        out += _pin_findings(me, view, _hostname_bad(me, view, unreached_by) or (resolved[:1] != [cluster_ip]))
    out += _resource_findings(me, view)
    out += _gpu_findings(me, view)
    return out


def _all_pinned(view: dict, name: str) -> bool:
    paths = [p for p in view.get("start_paths", {}).values() if name in p.get("wanted", [])]
    ifname = view.get("cluster_ifname", "")
    return bool(paths) and all(p.get("exists") and _pins(p["values"].get(name, ""), ifname) is not False
                               and name in p["values"] for p in paths)


def _pin_findings(me: str, view: dict, hostname_off_cluster: bool) -> List[dict]:
    ifname = view.get("cluster_ifname", "")
    out = []
    for name in ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME"):
        paths = {path: p for path, p in view.get("start_paths", {}).items() if name in p.get("wanted", [])}
        missing = [path for path, p in paths.items() if not p.get("exists") or name not in p["values"]]
        wrong = {path: p["values"][name] for path, p in paths.items()
                 if name in p.get("values", {}) and _pins(p["values"][name], ifname) is False}
        lib = "Gloo" if name.startswith("GLOO") else "NCCL"
        if wrong:
            out.append(finding(
                "socket_ifname_wrong", "error", me,
                f"{name} on {me} selects {', '.join(sorted(set(wrong.values())))}, not the cluster NIC {ifname}",
                f"set {name}={ifname} (run the nccl_profile role, which writes every start path)",
                [f"{path}: {name}={value}" for path, value in sorted(wrong.items())]))
        if missing:
            none = len(missing) == len(paths)
            code = "gloo_unpinned" if lib == "Gloo" else "nccl_unpinned"
            out.append(finding(
                code, "error" if hostname_off_cluster and none else "warning", me,
                f"{name} is not set " + ("in any start path" if none else "in " + ", ".join(missing))
                + f" on {me}: {lib} then picks its own interface"
                + (" (the host name's, which is not the cluster address)" if lib == "Gloo" and hostname_off_cluster
                   else "" if lib == "Gloo" else " (the first by its own order, often the public one)"),
                f"set {name}={ifname} for every start path: run the nccl_profile role "
                f"(site.yml) and start jobs with ncclkit-torchrun or under ncclkit-env",
                [f"{path}: {'missing' if not paths[path].get('exists') else 'no ' + name}" for path in missing]))
    return out


def _resource_findings(me: str, view: dict) -> List[dict]:
    out = []
    shm, gpus = view.get("shm_bytes"), int(view.get("gpu_count") or 0)
    if shm is not None and shm < SHM_MIN:
        # An error where NCCL's own shared-memory transport cannot fit (host.container' formula),
        # unless cuMem host memory carries that transport (NCCL 2.24+, CUDA driver 12.6+, not switched off).
        cumem = bool(view.get("shm_cumem"))
        error = shm < shm_required_bytes(gpus) and not cumem
        out.append(finding(
            "shm_small", "error" if error else "warning", me,
            f"/dev/shm on {me} holds {shm >> 20} MiB: "
            + ("NCCL's shared-memory transport uses cuMem host memory here (NCCL 2.24+, CUDA driver 12.6+), but "
               "NCCL's proxy and DataLoader workers still use /dev/shm and fail on it (Bus error)" if cumem else
               "NCCL's shared-memory transport between local GPUs and DataLoader workers fail on it "
               "(Bus error, ncclSystemError)"),
            "give the container a larger /dev/shm (docker run --shm-size=16g, or --ipc=host)",
            [f"statvfs(/dev/shm): {shm} bytes"]))
    memlock = view.get("memlock_kib")
    if view.get("transport") in RDMA_TRANSPORTS and memlock is not None and memlock < MEMLOCK_RDMA_MIN_KIB:
        out.append(finding(
            "memlock_low", "error", me,
            f"ulimit -l on {me} is {memlock} KiB: RDMA ({view.get('transport')}) cannot register NCCL's buffers",
            "raise the locked-memory limit to unlimited (limits.conf '* - memlock unlimited', "
            "LimitMEMLOCK=infinity for services, docker --ulimit memlock=-1)",
            [f"RLIMIT_MEMLOCK soft: {memlock} KiB"]))
    return out


def _gpu_findings(me: str, view: dict) -> List[dict]:
    out = []
    log = view.get("kernel_log") or {}
    gpus = int(view.get("gpu_count") or 0)
    if gpus and not log.get("readable", True):
        out.append(finding(
            "kernel_log_unreadable", "info", me,
            f"the kernel log on {me} could not be read, so Xid and ECC errors were not looked for",
            "run the check as root, or allow dmesg (sysctl kernel.dmesg_restrict=0)", [log.get("error", "")]))
    if log.get("xid"):
        out.append(finding(
            "gpu_xid", "error", me,
            f"the kernel log on {me} has {len(log['xid'])} NVIDIA Xid error(s): a GPU fault under NCCL "
            "shows as ncclInternalError/ncclUnhandledCudaError or a hang",
            "look the Xid codes up in NVIDIA's Xid table; reset the GPU or drain the node before training",
            log["xid"][-3:]))
    if log.get("ecc"):
        out.append(finding(
            "gpu_ecc", "error", me, f"the kernel log on {me} reports GPU memory (ECC) errors",
            "check nvidia-smi -q -d ECC,ROW_REMAPPER; a GPU with uncorrectable errors needs a reset or replacement",
            log["ecc"][-3:]))
    transport = view.get("transport", "socket")
    if gpus and transport == "efa" and not view.get("efa_nv_peermem"):
        # nvidia_peermem is InfiniBand's peer-memory client: it proves nothing for EFA.
        out.append(finding(
            "gpudirect_rdma_unconfirmed", "info", me,
            f"{me} uses EFA without the efa_nv_peermem module: GPUDirect RDMA then rests on dma-buf, which "
            "a recent kernel and NVIDIA driver give and no module shows",
            "read the validation report's GPUDirect RDMA line (NCCL's channels say GDRDMA when it is in use); "
            "where it says 'not in use', load efa_nv_peermem if the EFA driver ships it, or update the kernel "
            "and the NVIDIA driver", ["/proc/modules: no efa_nv_peermem"]))
    elif gpus and transport in RDMA_TRANSPORTS and transport != "efa" and not view.get("nvidia_peermem"):
        out.append(finding(
            "gpudirect_rdma_off", "warning", me,
            f"{me} uses {transport} but nvidia_peermem is not loaded: NCCL cannot do GPUDirect RDMA and "
            "copies through host memory",
            "modprobe nvidia_peermem (and add it to /etc/modules-load.d)", ["/proc/modules: no nvidia_peermem"]))
    topo = (view.get("topology") or {}).get("gpus") or {}
    if gpus and transport in RDMA_TRANSPORTS and topo:
        links = [link for nics in topo.values() for link in nics.values()]
        if links and all(link == "SYS" for link in links):
            out.append(finding(
                "gpu_nic_far", "warning", me,
                f"every GPU on {me} reaches every NIC only across the CPU interconnect (SYS): GPUDirect RDMA "
                "is slow or off",
                "use the NICs on the GPUs' PCIe switches (NCCL_IB_HCA), or a host type with GPU-local NICs",
                [f"{gpu}: {nics}" for gpu, nics in sorted(topo.items())][:4]))
    return out


def cluster_findings(hosts: Dict[str, dict], master: dict) -> List[dict]:
    """Findings about the cluster as a whole, decided once (on the first host)."""
    out = []
    names = list(hosts)
    for key, label, severity in (("nccl_version", "NCCL", "error"), ("torch_version", "torch", "error"),
                                 ("driver_version", "NVIDIA driver", "warning")):
        values = {name: str(hosts[name].get(key) or "") for name in names}
        known = {v for v in values.values() if v}
        if len(known) > 1:
            out.append(finding(
                "version_mismatch", severity, None,
                f"the {label} version differs between the nodes ({', '.join(sorted(known))}): ranks with different "
                "NCCL or torch builds fail or hang at the first collective",
                f"install one {label} version on every node (one image for all)",
                [f"{name}: {value or 'unknown'}" for name, value in values.items()]))
    addr = master.get("addr", "")
    cluster = {hosts[name].get("cluster_ip"): name for name in names}
    if len(names) > 1 and addr and addr not in cluster:
        out.append(finding(
            "master_off_cluster", "error", names[0],
            f"MASTER_ADDR {addr} ({master.get('source')}) is not a cluster address: the rendezvous goes over "
            "another network, which the nodes may not share",
            f"use the first node's cluster address, MASTER_ADDR={hosts[names[0]].get('cluster_ip')} "
            "(run the nccl_profile role: ncclkit-torchrun sets it)",
            [f"cluster addresses: {', '.join(f'{n}={ip}' for ip, n in cluster.items())}"]))
    return out


def probe_findings(me: str, master: dict, outcome: Optional[str], holder: Optional[str] = None) -> List[dict]:
    """A node that cannot open a TCP connection to MASTER_ADDR:port (timeout or no route); the master
    where a process already listens on that port (a stale job's: the next job's store cannot bind)."""
    if holder:
        return [finding(
            "master_port_in_use", "error", me,
            f"{holder} already listens on the rendezvous port {master['port']} on {me}: torch's store "
            "cannot bind it, so the next job fails at start (address already in use)",
            f"end that process on {me} (a job left over?), or give the job another --master-port",
            [f"TCP port {master['port']} on {me}: held by {holder}"])]
    if outcome in (None, "open", "refused"):
        return []
    return [finding(
        "master_port_blocked", "error", me,
        f"{me} cannot reach the rendezvous {master['addr']}:{master['port']} ({outcome}): torch's store is "
        "there, so the job hangs at init",
        f"open TCP port {master['port']} on the master from the cluster network (run the nccl_network role)",
        [f"TCP connect from {me} to {master['addr']}:{master['port']}: {outcome}"])]


def ephemeral_ports(port_range) -> List[int]:
    """Two ports inside a host's ephemeral range ([low, high]), a third and two thirds of the way up,
    where Gloo's and NCCL's listeners bind: [] when the range is unknown."""
    try:
        low, high = (int(port) for port in port_range)
    except (TypeError, ValueError):
        return []
    if not 1 <= low < high <= 65535:
        return []
    return sorted({low + (high - low) // 3, low + 2 * (high - low) // 3})


def path_targets(nics: Dict[str, dict], plan: Dict[str, List[str]]) -> Dict[str, dict]:
    """{host: {"mtu", "peers": {peer: cluster address}, "ports": {peer: [port]}}} from {host: {cluster_ip,
    mtu, port_range}} and the probe plan (host -> peers); a host without a known MTU sends no MTU echo,
    a peer without a known ephemeral range gets no port probe."""
    targets = {}
    for host, peers in plan.items():
        reachable = [peer for peer in peers if nics[peer].get("cluster_ip")]
        ports = {peer: ephemeral_ports(nics[peer].get("port_range")) for peer in reachable}
        targets[host] = {"mtu": int(nics[host]["mtu"]) if nics[host].get("mtu") else 0,
                         "peers": {peer: nics[peer]["cluster_ip"] for peer in reachable},
                         "ports": {peer: found for peer, found in ports.items() if found}}
    return targets


def path_findings(me: str, path: Dict[str, dict]) -> List[dict]:
    """A path that answers small echoes but not ones that fill this host's MTU: frames of that size are
    dropped on the way without a word (no ICMP), so NCCL connects and then hangs on its first large
    message. An unknown answer (no ping, a ping without -M) is no finding."""
    blocked = {peer: result for peer, result in sorted((path or {}).items())
               if result.get("small") is True and result.get("large") is False}
    if not blocked:
        return []
    mtu = next(iter(blocked.values()))["mtu"]
    return [finding(
        "path_mtu", "error", me,
        f"{me}'s cluster NIC has MTU {mtu}, but a packet of that size to {', '.join(blocked)} does not arrive while "
        "a small one does: something on the way (a switch port, bridge, tunnel or the cloud network) takes less "
        "and drops larger frames without saying so; NCCL connects, then hangs in its first large transfer",
        f"give every host's cluster NIC and the network between them one MTU: lower {me}'s (ip link set NIC mtu "
        "1500) or raise the path's (the switch ports, the cloud's jumbo-frame setting); site.yml's nccl_network "
        "probe measures which MTU gets through",
        [f"from {me}: ping -M do -s {mtu - 28} {result['address']} ({peer}): no reply; a small ping: a reply"
         for peer, result in blocked.items()])]


def route_findings(me: str, routes: Dict[str, dict], ifname: str) -> List[dict]:
    """A route to a ring neighbour's cluster address that leaves by another interface than the cluster
    NIC (a stale static route, a second NIC on an overlapping network): connections to it go out the
    wrong way, and their replies come back on another path or not at all. routes: {peer: {address, dev}}."""
    wrong = [(peer, route["address"], route["dev"]) for peer, route in sorted((routes or {}).items())
             if route.get("dev") and ifname and route["dev"] not in (ifname, "lo")]
    if not wrong:
        return []
    where = ", ".join("{0} ({1}) leaves by {2}".format(peer, address, dev) for peer, address, dev in wrong)
    return [finding(
        "route_off_cluster", "error", me,
        f"on {me}, the route to {where}, not by the cluster NIC {ifname}: connections to it go out the wrong way "
        "and their replies take another path, so they time out (an asymmetric route)",
        f"remove the route that sends the cluster network elsewhere on {me} (`ip route get ADDRESS` shows it; "
        "`ip route del ADDRESS`), or route the cluster network by the cluster NIC",
        ["{0}: ip route get {1}: dev {2}".format(me, address, dev) for peer, address, dev in wrong])]


BLOCKED_PORT = ("timeout", "unreachable")


def _port_failures(hosts: Dict[str, dict]) -> Dict[tuple, dict]:
    """{(prober, target): {port: outcome}} for the probes whose connections did not get in, leaving out
    targets the prober's small echo did not reach (a host down is the ping findings' to name)."""
    failed = {}
    for prober, view in hosts.items():
        probes = view.get("probes") or {}
        for target, outcomes in (probes.get("ports") or {}).items():
            if (probes.get("path") or {}).get(target, {}).get("small") is False:
                continue
            bad = {port: outcome for port, outcome in outcomes.items() if outcome in BLOCKED_PORT}
            if bad:
                failed[(prober, target)] = bad
    return failed


def port_findings(hosts: Dict[str, dict]) -> List[dict]:
    """A host whose ephemeral range (where Gloo's and NCCL's listeners bind) does not take new connections
    from its peers: the rendezvous may still work while Gloo's and NCCL's own connections hang or fail.

    Blamed on the target: the firewall that drops or rejects is the one taking the connection. Where two
    hosts fail to reach each other both ways (two nodes, or a host that also blocks the replies to its own
    connections), the side that actively rejected (ICMP) is the one named; the other direction only
    timed out because its replies were refused on the way back."""
    failed = _port_failures(hosts)
    blamed: Dict[str, List[str]] = {}
    for (prober, target), bad in failed.items():
        reverse = failed.get((target, prober))
        if reverse is not None and "unreachable" in reverse.values() and "unreachable" not in bad.values():
            continue   # the prober's own firewall refused its replies: the reverse pair names it
        blamed.setdefault(target, []).append(prober)
    out = []
    for target, probers in blamed.items():
        evidence = [f"TCP connect from {prober} to {target} port {port}: {outcome}"
                    for prober in probers for port, outcome in sorted(failed[(prober, target)].items())]
        how = "rejected" if any("unreachable" in failed[(p, target)].values() for p in probers) else "dropped"
        out.append(finding(
            "peer_ports_blocked", "error", target,
            f"new TCP connections from {', '.join(sorted(probers))} to {target}'s ephemeral ports are {how} "
            f"(a firewall on {target} or on the way): Gloo and NCCL listen there, so the job hangs or fails "
            "after the rendezvous, when the ranks connect to each other",
            f"let the cluster network into {target}'s ephemeral port range (net.ipv4.ip_local_port_range), "
            f"with replies to {target}'s own connections: run the nccl_network role, or open the range in {target}'s "
            "firewall (nft/ufw/firewalld) or the cloud's security group",
            evidence))
    return out


def verdict(host: str, findings: List[dict]) -> str:
    """One line: ready, or the first error's code and cause."""
    errors = [f for f in findings if f["severity"] == "error"]
    warnings = [f for f in findings if f["severity"] == "warning"]
    if errors:
        return f"{host}: NOT READY: {errors[0]['cause']}"
    return f"{host}: ready" + (f" ({len(warnings)} warning(s))" if warnings else "")


def choose_master(profile_master: dict, first_cluster_ip: str, default_port: int) -> dict:
    """The rendezvous the jobs will use: the profile's launcher's, else the first node's cluster address."""
    if profile_master.get("addr"):
        return {"addr": profile_master["addr"], "port": int(profile_master.get("port") or default_port),
                "source": "the profile's ncclkit-torchrun"}
    return {"addr": first_cluster_ip, "port": int(default_port),
            "source": "no profile written: the first node's cluster address"}


def judge(hosts: Dict[str, dict], master: dict) -> dict:
    """Every host's findings and verdict from every host's view and probes (see check.host.gather
    and the module's probe step)."""
    unreached: Dict[str, List[str]] = {name: [] for name in hosts}
    for prober, view in hosts.items():
        for target, reached in (view.get("probes") or {}).get("hostname", {}).items():
            if target in unreached and reached is False:
                unreached[target].append(prober)
    findings = cluster_findings(hosts, master)
    for name, view in hosts.items():
        findings += host_findings(name, hosts, unreached[name])
        probes = view.get("probes") or {}
        findings += probe_findings(name, master, probes.get("master"), probes.get("master_holder"))
        findings += path_findings(name, probes.get("path") or {})
        findings += route_findings(name, probes.get("routes") or {}, view.get("cluster_ifname", ""))
    findings += port_findings(hosts)
    order = {"error": 0, "warning": 1, "info": 2}
    findings.sort(key=lambda f: order.get(f["severity"], 3))
    verdicts = {name: verdict(name, [f for f in findings if f["host"] in (name, None)]) for name in hosts}
    # Which host holds the rendezvous: a port nobody reaches points at that host, not at the ones asking.
    holder = next((name for name, view in hosts.items() if view.get("cluster_ip") == master.get("addr")), None)
    return {"ready": not any(f["severity"] == "error" for f in findings), "verdicts": verdicts,
            "findings": findings, "master": dict(master, host=holder)}
