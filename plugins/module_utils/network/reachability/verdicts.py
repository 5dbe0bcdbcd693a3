"""From every host's reachability results to a matrix and one verdict per failing pair.

Pure Python 3.8+ standard library. `results` maps each host to what `network.reachability.probe.Check`
returned there (None when the host did not report). A verdict is a finding
(common.findings.finding: a stable `code`, a `severity` (error fails the check, warning does not),
`cause`, `fix`, `host`, `rank` None, `confidence`, `evidence`, `consequence_of`) with the pair's
`source` and `target` hosts and its `ports` added; `host` is the target, the host probed (for a
host's own verdict, that host); `message` is the one line a play prints.
"""

from __future__ import annotations

from typing import Dict, List, Optional

from ansible_collections.ncclkit.cluster.plugins.module_utils.common.findings import finding
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.firewall.evidence import describe
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.links.bandwidth import judge_links

FIX_FIREWALL = ("admit TCP {ports} from the cluster hosts on {ifname} of {host} (nccl_network_firewall does "
                "this), or remove the rule that drops them")
FIX_CLOUD = ("open TCP {ports} between the cluster hosts in the cloud's security group or network ACL "
             "(AWS: a rule that admits the security group itself)")
PORT_FAILURES = ("timeout", "refused", "unreachable")


def build_report(hosts: List[dict], results: Dict[str, Optional[dict]], rendezvous_ports=(),
                 min_bandwidth_gbps: float = 0.0, left_out=(), link_median_fraction: float = 0.5,
                 link_speed_fraction: float = 0.1) -> dict:
    """hosts: [{name, address, ifname, mtu}] in play order -> {matrix, verdicts, passed, link_bandwidth}.
    left_out: hosts of the play that failed before the check (the play reports them)."""
    by_name = {host["name"]: host for host in hosts}
    matrix, verdicts = [], []
    for name in left_out:
        verdicts.append(_verdict("left_out", "warning", None, name,
                                 f"{name} failed earlier in the play and was not checked",
                                 "fix that host's failure (above) and run the play again"))
    for host in hosts:
        result = results.get(host["name"])
        if not result:
            verdicts.append(_verdict("no_result", "error", None, host["name"],
                                     f"{host['name']} did not report its part of the check",
                                     "read the task's output for that host: it failed or was unreachable"))
            continue
        verdicts += _listener_verdicts(host, result, rendezvous_ports, first=host is hosts[0])
        for probe in result.get("probes", []):
            target = by_name.get(probe["peer"], {"name": probe["peer"], "ifname": "?", "mtu": None})
            row = _row(host, target, probe)
            matrix.append(row)
            verdict = _pair_verdict(host, target, probe, results)
            if verdict:
                verdicts.append(verdict)
                row["status"] = verdict["severity"]
                row["cause"] = verdict["code"]
    _name_the_dropping_host(verdicts, matrix)
    links, found = judge_links(hosts, results, link_median_fraction, link_speed_fraction, min_bandwidth_gbps)
    verdicts += [_with_message(dict(item, ports=[])) for item in found]
    _mark_bandwidth_rows(matrix, found)
    errors = [v for v in verdicts if v["severity"] == "error"]
    return {"matrix": matrix, "verdicts": verdicts, "passed": not errors,
            "summary": _summary(matrix, verdicts), "link_bandwidth": links}


def _mark_bandwidth_rows(matrix, found):
    """A probed pair whose link is slow (or unmeasured) shows it in its matrix row (status and cause)."""
    rows = {(row["source"], row["target"]): row for row in matrix}
    for item in found:
        row = rows.get((item["source"], item["target"]))
        if row is not None and row["status"] == "ok":
            row["status"], row["cause"] = item["severity"], item["code"]


def _row(source, target, probe):
    ports = probe.get("ports", {})
    return {
        "source": source["name"], "target": target["name"], "address": probe.get("address"),
        "route_dev": probe.get("route_dev"), "ping": probe.get("ping"), "ping_large": probe.get("ping_large"),
        "large_size": probe.get("large_size"),
        "ports_ok": sorted(int(port) for port, state in ports.items() if state == "ok"),
        "ports_failed": {port: state for port, state in ports.items() if state != "ok"},
        "bandwidth_gbps": probe.get("bandwidth_gbps"), "status": "ok", "cause": None,
    }


def _listener_verdicts(host, result, rendezvous_ports, first):
    verdicts = []
    for port, state in sorted(result.get("listeners", {}).items()):
        if state == "ok":
            continue
        master = first and int(port) in rendezvous_ports
        if state.startswith("in use"):
            cause = f"port {port} on {host['name']} is {state}"
            fix = ("stop that process or choose another port (nccl_network_master_port, MASTER_PORT)" if master
                   else "nothing to do unless NCCL keeps failing there: an ephemeral port was busy")
            verdicts.append(_verdict("port_in_use", "error" if master else "warning", None, host["name"],
                                     cause, fix, ports=[int(port)]))
        else:
            verdicts.append(_verdict("listener_failed", "warning", None, host["name"],
                                     f"ncclkit could not listen on port {port} of {host['name']}: {state}",
                                     "check the cluster address and the port", ports=[int(port)]))
    return verdicts


def _pair_verdict(source, target, probe, results):
    s, t = source["name"], target["name"]
    ports = probe.get("ports", {})
    failed = {int(p): state for p, state in ports.items() if state in PORT_FAILURES}
    answered = [int(p) for p, state in ports.items() if state == "ok"]
    target_result = results.get(t)
    if target_result is None:
        return _verdict("no_result", "error", s, t, f"{t} did not take part in the check, so {s} could not "
                        "test it", "read the task's output for that host: it failed or was unreachable")
    ifname = source.get("ifname") or "?"
    answering = [alt for alt in probe.get("alternates", []) if alt.get("ping")]
    if probe.get("route_dev") and probe["route_dev"] != ifname:
        return _verdict("wrong_nic", "error", s, t,
                        f"traffic from {s} to {t} ({probe['address']}) leaves through {probe['route_dev']}, "
                        f"not the cluster NIC {ifname}",
                        "fix the routes, or choose the NIC that holds the peers' network "
                        "(nccl_preflight_ifname / nccl_preflight_cluster_cidr)")
    if answering and not probe.get("ping") and not answered:
        alt = answering[0]
        return _verdict("wrong_nic", "error", s, t,
                        f"{t} answers {s} at {alt['address']} ({alt.get('ifname', '?')}) but not at its "
                        f"cluster address {probe['address']} ({target.get('ifname', '?')})",
                        f"use {alt.get('ifname', 'that NIC')} as the cluster NIC: set nccl_preflight_ifname: "
                        f"{alt.get('ifname', '<name>')} (and NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME)")
    if probe.get("route_error"):
        return _verdict("no_route", "error", s, t,
                        f"{s} has no route to {t} at {probe['address']}: {probe['route_error']}",
                        "put the hosts in one subnet or add a route, or choose another NIC "
                        "(nccl_preflight_ifname)")
    if not probe.get("ping") and not answered:
        how = ", ".join(sorted(set(failed.values()))) or "no answer"
        return _verdict("unreachable", "error", s, t,
                        f"{s} cannot reach {t} at {probe['address']} over {ifname}: no ICMP echo reply and "
                        f"no TCP connection ({how})",
                        "admit the cluster hosts to each other in the security group or firewall (ICMP and "
                        "TCP), and check that they share a subnet (VPC, vSwitch, availability zone)")
    if probe.get("ping") and probe.get("ping_large") is False:
        return _mtu_verdict(source, target, probe, target_result)
    if failed:
        return _ports_verdict(source, target, probe, failed, target_result, ifname)
    strangers = {int(p): state for p, state in ports.items() if state.startswith("answered by")}
    if strangers:
        port, state = next(iter(sorted(strangers.items())))
        return _verdict("address_conflict", "error", s, t,
                        f"port {port} at {probe['address']}, {t}'s cluster address, is {state}",
                        "two hosts share one address: give every host its own", ports=sorted(strangers))
    foreign = [int(p) for p, state in ports.items() if state == "foreign"]
    if foreign:
        return _verdict("port_in_use", "warning", s, t,
                        f"{_phrase(foreign)} of {t} {'is' if len(foreign) == 1 else 'are'} held by another process (no ncclkit banner)",
                        "nothing to do unless that is the rendezvous port of a job that no longer runs",
                        ports=foreign)
    if probe.get("ping") is False:
        return _verdict("icmp_blocked", "warning", s, t,
                        f"{t} does not answer {s}'s pings but accepts its TCP connections",
                        "admit ICMP echo between the hosts to keep ping usable for diagnosis")
    return None


def _mtu_verdict(source, target, probe, target_result):
    s, t = source["name"], target["name"]
    own, other = source.get("mtu"), (target_result or {}).get("mtu") or target.get("mtu")
    seen = (f"{probe['large_size']}-byte don't-fragment pings from {s} to {t} are lost while small ones pass")
    if own and other and own != other:
        return _verdict("mtu_mismatch", "error", s, t,
                        f"MTU mismatch: {s}'s {source.get('ifname')} has MTU {own}, {t}'s "
                        f"{target.get('ifname')} has MTU {other}; {seen}",
                        f"give the cluster NIC of every host the same MTU (ip link set "
                        f"{source.get('ifname')} mtu {min(own, other)}, or the cloud's jumbo-frame setting)")
    return _verdict("path_mtu", "error", s, t,
                    f"the path from {s} to {t} carries less than MTU {own}: {seen}",
                    "lower the cluster NIC's MTU on every host to what the network carries, or enable "
                    "jumbo frames on the network")


def _ports_verdict(source, target, probe, failed, target_result, ifname):
    s, t = source["name"], target["name"]
    refused = sorted(p for p, state in failed.items() if state == "refused")
    dropped = sorted(p for p, state in failed.items() if state != "refused")
    listeners = (target_result or {}).get("listeners", {})
    ports = sorted(failed)
    evidence = [item for item in ((target_result or {}).get("firewall") or {}).get("drops", [])
                if item.get("source") == s and set(item.get("ports", [])) & set(ports)]
    firewalls = sorted({item["firewall"] for item in evidence})
    how = "drops" if dropped else "rejects"
    code = "ports_dropped" if dropped else "ports_rejected"
    not_listening = [p for p in refused if listeners.get(str(p), "ok") != "ok"]
    if refused and not dropped and len(not_listening) == len(refused):
        return _verdict("port_in_use", "warning", s, t,
                        f"{t} could not listen on {_phrase(refused)}, so {s} was refused",
                        "see that host's port_in_use verdict", ports=refused)
    if evidence:
        shown = "; ".join(describe(item) for item in evidence[:3])
        cause = (f"{t} {how} TCP {_phrase(ports)} from {s} (pings pass): {t}'s "
                 f"{'/'.join(firewalls)} ruleset {how} {'it' if len(ports) == 1 else 'them'} ({shown})")
        fix = FIX_FIREWALL.format(ports=_phrase(ports), ifname=target.get("ifname") or ifname, host=t)
    else:
        cause = (f"TCP {_phrase(ports)} of {t} {'is' if len(ports) == 1 else 'are'} {'dropped' if dropped else 'rejected'} on the way from {s} "
                 f"(pings pass) and {t}'s own ruleset shows no rule that does it: a security group, "
                 "network ACL or a firewall between the hosts")
        fix = FIX_CLOUD.format(ports=_phrase(ports))
    verdict = _verdict(code, "error", s, t, cause, fix, ports=ports, evidence=[describe(item) for item in evidence])
    verdict["firewalls"] = firewalls
    return verdict


def _name_the_dropping_host(verdicts, matrix):
    """With several probers per host, say whether a host drops everyone or only some."""
    for verdict in verdicts:
        if verdict["code"] not in ("ports_dropped", "ports_rejected"):
            continue
        target = verdict["target"]
        rows = [row for row in matrix if row["target"] == target]
        blocked = sorted({row["source"] for row in rows
                          if any(state in PORT_FAILURES for state in row["ports_failed"].values())})
        passed = sorted({row["source"] for row in rows} - set(blocked))
        verdict["blocked_from"] = blocked
        if passed:
            verdict["cause"] += f"; {', '.join(passed)} get{'s' if len(passed) == 1 else ''} through"
        elif len(blocked) > 1:
            verdict["cause"] += f"; every host that probes {target} is blocked ({', '.join(blocked)})"
        verdict["message"] = _message(verdict)


def _verdict(code, severity, source, target, cause, fix, ports=None, evidence=()):
    return _with_message(finding(code, severity, cause, fix, host=target, evidence=evidence, source=source,
                                 target=target, ports=list(ports or [])))


def _with_message(verdict):
    verdict["message"] = _message(verdict)
    return verdict


def _message(verdict):
    pair = f"{verdict['source']} -> {verdict['target']}" if verdict["source"] else verdict["target"]
    return f"{verdict['severity'].upper()} {verdict['code']} ({pair}): {verdict['cause']}. Fix: {verdict['fix']}."


def _ports(ports):
    return ", ".join(str(port) for port in ports)


def _phrase(ports):
    return f"port{'s' if len(ports) != 1 else ''} {_ports(ports)}"


def _summary(matrix, verdicts):
    errors = sum(1 for v in verdicts if v["severity"] == "error")
    ok = sum(1 for row in matrix if row["status"] == "ok")
    return (f"{ok}/{len(matrix)} probed pairs healthy, {errors} error(s), "
            f"{len(verdicts) - errors} warning(s)")
