"""What the cluster's live check (`ncclkit check`'s document) adds to a diagnosis from logs.

A job that hangs at the rendezvous or cannot connect often leaves logs that say only that: torch's
store retries, a Gloo timeout to an address, nothing about which host's NIC, firewall or route is
wrong. The check, run now on the same cluster, often knows (a cluster NIC down, the rendezvous port
unreachable, a host name resolving to the public address, Gloo unpinned). `explain` keeps what the
logs say happened (the root finding's code) and takes the host and the reason from the check's
error findings that can cause it; it never turns a healthy diagnosis into a problem.

    result = explain(result, check_document)   # result: diagnosis.log's; check: ncclkit check --json's

Pure Python 3.8+ standard library.
"""

from __future__ import annotations

from .root_cause import verdict

# The log's root codes a network or naming fault explains, and the check's codes that are such faults,
# in the order a single cause is chosen (a NIC that is down before a port that is not reached, ...).
CONNECTIVITY = frozenset({
    "hang_in_rendezvous", "rendezvous_timeout", "rendezvous_connection_error", "connect_timeout",
    "connect_refused", "no_route", "connect_failed", "retry_exceeded", "gloo_connect_failed",
    "nccl_system_error", "nccl_internal_error",
})
NETWORK_CAUSES = ("cluster_nic_down", "route_off_cluster", "peer_ports_blocked", "master_port_blocked", "hostname_unresolvable",
                  "hostname_loopback", "hostname_unreachable", "socket_ifname_wrong", "gloo_unpinned", "nccl_unpinned",
                  "master_off_cluster")
# The check's codes that make a rank on that host look stuck in a collective (its peers' data never
# reaches it), in the order a single cause is chosen.
HANG_HOST_CAUSES = ("cluster_nic_down", "route_off_cluster", "peer_ports_blocked")
# Root codes a host fault explains only where the logs name no host (a live state may be the job's
# own leftover, e.g. its store still holding the port: it must not move a host the logs named).
HOST_CAUSES: dict[str, tuple[str, ...]] = {
    "address_in_use": ("master_port_in_use",),
    "shm_too_small": ("shm_small",),
    "ib_verbs_failed": ("memlock_low",),
    "cuda_error": ("gpu_xid", "gpu_ecc"),
}
UNKNOWN_HOSTS = (None, "", "unknown")


def explain(result: dict, check: dict) -> dict:
    """The diagnosis with the check's explanation on its root finding (host, cause, fix, `explained_by`),
    the check's error findings added after it, and a note saying what the check found."""
    findings = [dict(f) for f in result.get("findings", [])]
    root = findings[0] if findings and findings[0]["severity"] == "error" else None
    notes = list(result.get("notes", []))
    notes.append(f"live check: {check.get('verdict') or 'no verdict'}")
    if root is None:
        return dict(result, notes=notes)
    unreachable = check.get("unreachable") or {}
    causes = _causes(root, check)
    if causes:
        host, chosen, reason = causes
        if host != root.get("host"):
            root["rank"] = None  # the logs' rank was on the host that reported, not on this one
        root.update(host=host, explained_by=[f["code"] for f in chosen],
                    cause=f"{root['cause']}; the live check names the cause on {host}: {reason}",
                    fix=chosen[0]["fix"], confidence="high")
    elif unreachable and root["code"] in CONNECTIVITY and root.get("host") in UNKNOWN_HOSTS + tuple(unreachable):
        host = sorted(unreachable)[0]
        root.update(host=host, explained_by=["host_unreachable"], rank=None,
                    cause=f"{root['cause']}; the live check cannot reach {host} now: {unreachable[host]}",
                    fix=f"bring {host} back (power, network, sshd) and check it with `ncclkit check -i INVENTORY`")
    added = [_from_check(item) for item in check.get("findings", []) if item.get("severity") == "error"]
    findings = [root] + added + findings[1:]
    return dict(result, findings=findings, notes=notes,
                verdict=verdict(findings, result.get("lines", 0), (result.get("hosts") or {}).keys()))


def _causes(root: dict, check: dict) -> tuple[str, list[dict], str] | None:
    """(host, the check's findings on it that explain the root, one sentence), or None."""
    errors = [f for f in check.get("findings", []) if f.get("severity") == "error"]
    if root["code"] in CONNECTIVITY:
        wanted: tuple[str, ...] = NETWORK_CAUSES
    elif root["code"] == "hang_in_collective" and root.get("rank") is None:
        wanted = ("path_mtu",)  # connected, then stuck with no rank to blame: full frames that never arrive
    elif root["code"] == "hang_in_collective":
        # A suspect rank on a host whose own connections the check finds broken (its firewall drops what
        # its peers send, its NIC or route is off): the rank never got the data, it did not stop.
        wanted = HANG_HOST_CAUSES
        errors = [f for f in errors if f.get("host") == root.get("host")]
    elif root["code"] in HOST_CAUSES and root.get("host") in UNKNOWN_HOSTS:
        wanted = HOST_CAUSES[root["code"]]
    else:
        return None
    matching = sorted((f for f in errors if f.get("code") in wanted), key=lambda f: wanted.index(f["code"]))
    if not matching:
        return None
    first = matching[0]
    if first["code"] == "master_port_blocked":
        return _blocked_rendezvous(matching, check)
    host = _host_of(first)
    chosen = [f for f in matching if _host_of(f) == host]
    return host, chosen, "; ".join(f"{f['cause']} ({f['code']})" for f in chosen)


def _blocked_rendezvous(matching: list[dict], check: dict) -> tuple[str, list[dict], str]:
    """When no other host reaches the rendezvous port, the master's side (its firewall, its route back)
    is the likely cause; when only some do not, theirs."""
    master = check.get("master") or {}
    blocked = sorted({_host_of(f) for f in matching if f["code"] == "master_port_blocked"})
    others = [h for h in (check.get("hosts") or []) if h != master.get("host")]
    chosen = [f for f in matching if f["code"] == "master_port_blocked"]
    where = f"{master.get('addr')}:{master.get('port')}"
    if master.get("host") and others and set(blocked) == set(others):
        return master["host"], chosen, (
            f"no other host reaches the rendezvous {where} on {master['host']} ({', '.join(blocked)} tried): "
            f"{master['host']}'s firewall, its route back or its cluster NIC (master_port_blocked)")
    return blocked[0], chosen, f"{chosen[0]['cause']} (master_port_blocked)"


def _host_of(finding: dict) -> str:
    return finding.get("host") or "cluster"


def _from_check(item: dict) -> dict:
    """A check finding in the diagnosis' finding form."""
    evidence = item.get("evidence") or []
    return {"code": item["code"], "severity": item["severity"], "host": item.get("host"), "rank": item.get("rank"),
            "cause": item.get("cause", ""), "fix": item.get("fix", ""), "consequence_of": None,
            "evidence": "live check: " + ("; ".join(evidence) if isinstance(evidence, list) else str(evidence)),
            "source": "ncclkit check", "line": None, "count": 1, "confidence": "high"}
