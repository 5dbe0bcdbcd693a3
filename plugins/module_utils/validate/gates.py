"""nccl_validate's gates, on by default and calibrated on the cluster itself: the transport NCCL
must use between hosts (from the RDMA ports nccl_preflight listed) and the floor of the
multi-node bus bandwidth (a fraction of what the links carry), each with where it came from.

Ring all-reduce: nccl-tests reports busbw = algbw * 2(n-1)/n, which for a ring equals the rate
at which each rank sends to its neighbour, so a ring across nodes reaches at most the rate of
the link between two nodes in one direction. The floor is `fraction x link rate (Gbit/s) / 8`
in GB/s (nccl-tests' unit). The link rate is the median measured TCP rate of the links
(ncclkit_network.link_bandwidth, iperf3) for sockets and Gloo, and the sum of the active RDMA
ports' rates of the slowest node (/sys/class/infiniband/*/ports/*/rate) for IB, eRDMA and EFA.

Pure Python 3.8+ standard library.
"""

from __future__ import annotations

import math

import re

from ansible_collections.ncclkit.cluster.plugins.module_utils.host.rdma import rdma_ports, rdma_transport

# What nccl_diagnose expects between hosts (its choices), and what rdma_transport finds.
TRANSPORTS = ("any", "socket", "ib", "efa")
_HARDWARE_TO_EXPECTED = {"efa": "efa", "erdma": "ib", "ib": "ib", "socket": "socket"}
_SHOWN = {"efa": "EFA", "ib": "IB", "socket": "Socket", "any": "any"}
AUTO = "auto"

# The gate's states in the report.
PASSED, FAILED, NOT_CALIBRATED, NOT_GATED = "passed", "failed", "not calibrated", "not gated"

_RATE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*Gb/sec")


class GateError(ValueError):
    """A gate setting that cannot be read; the message names the variable and the fix."""


def port_rate_gbps(text):
    """Gbit/s of a sysfs port rate ("400 Gb/sec (4X NDR)"), or None."""
    match = _RATE.match(str(text or ""))
    return float(match.group(1)) if match else None


def _rate_field(line):
    fields = str(line).split("|")
    return fields[5].strip() if len(fields) > 5 else ""


def expected_transport(setting, ports_by_host):
    """{transport, source}: what NCCL must use between hosts.

    `setting` auto: the hardware decides as nccl_profile_rdma auto does (an active EFA port: efa;
    an active eRDMA/IB/RoCE port: ib; none: socket) from each host's nccl_preflight_rdma_ports;
    hosts that differ expect `any` (nccl_profile fails that cluster first). Else the named one."""
    setting = str(setting if setting is not None else AUTO).strip().lower()
    if setting != AUTO:
        if setting not in TRANSPORTS:
            raise GateError("nccl_validate_expected_transport must be auto, {0} (got {1!r})".format(
                ", ".join(TRANSPORTS), setting))
        return {"transport": setting, "source": "explicit nccl_validate_expected_transport"}
    unlisted = sorted(host for host, lines in (ports_by_host or {}).items() if not isinstance(lines, (list, tuple)))
    if unlisted or not ports_by_host:
        return {"transport": "any", "source": "not calibrated: no RDMA port listing from nccl_preflight on {0} "
                "(run nccl_preflight first)".format(", ".join(unlisted) or "any host")}
    found = {host: _HARDWARE_TO_EXPECTED[rdma_transport(lines)] for host, lines in ports_by_host.items()}
    kinds = sorted(set(found.values()))
    if len(kinds) > 1:
        return {"transport": "any", "source": "not calibrated: the hosts differ ({0})".format(
            ", ".join("{0} {1}".format(host, _SHOWN[kind]) for host, kind in sorted(found.items())))}
    kind = kinds[0]
    if kind == "socket":
        return {"transport": kind, "source": "hardware: no active IB/eRDMA/EFA port on any host"}
    active = sorted({port["device"] for lines in ports_by_host.values() for port in rdma_ports(lines) if port["active"]})
    return {"transport": kind, "source": "hardware: active {0} port(s) on every host ({1})".format(
        _SHOWN[kind], ", ".join(active))}


def fabric_rate(ports_by_host, transport):
    """{gbps, source}: the RDMA bandwidth of the slowest node, the sum of its active ports' rates
    (EFA's ports for efa, the IB transport's usable ports for ib); gbps None when a host has none."""
    per_host = {}
    for host, lines in sorted((ports_by_host or {}).items()):
        rates = [port_rate_gbps(_rate_field(line)) for line, port in _port_pairs(lines)
                 if port["active"] and (port["driver"] == "efa" if transport == "efa" else port["usable"])]
        per_host[host] = sum(rates) if rates and None not in rates else None
    unread = [host for host, rate in per_host.items() if rate is None]
    if not per_host or unread:
        return {"gbps": None, "source": "no RDMA port rate read on {0} (/sys/class/infiniband/*/ports/*/rate; "
                "run nccl_preflight)".format(", ".join(unread) or "any host")}
    slowest = min(per_host, key=per_host.get)
    return {"gbps": per_host[slowest], "source": "fabric {0} Gbit/s per node ({1}, the slowest; sum of its active "
            "RDMA port rates)".format(_num(per_host[slowest]), slowest)}


def _port_pairs(lines):
    kept = [line for line in lines or [] if str(line).strip()]
    return zip(kept, rdma_ports(kept))


def measured_link(network_facts):
    """{gbps, source}: the median TCP rate of the measured links, from the first host's
    ncclkit_network that carries link_bandwidth (nccl_network, iperf3); gbps None without one."""
    for facts in network_facts or []:
        measured = (facts or {}).get("link_bandwidth") if isinstance(facts, dict) else None
        if isinstance(measured, dict) and measured.get("measured") is not False:
            median = _positive(measured.get("median_gbps"))
            if median is not None:
                links = measured.get("links") or []
                return {"gbps": median, "source": "median link {0} Gbit/s (iperf3, {1} link(s))".format(
                    _num(median), len(links))}
    return {"gbps": None, "source": "no link measurement (ncclkit_network.link_bandwidth: run nccl_network with "
            "nccl_network_iperf3 before nccl_validate)"}


def busbw_gate(setting, variable, fraction, link):
    """{threshold_gbps, source, state}: the busbw floor in GB/s and where it came from.

    `setting`: auto (fraction x link rate / 8), a number of GB/s (explicit; 0: not gated);
    `link`: {gbps, source} from measured_link or fabric_rate. State `not calibrated` (no link
    rate to derive it from) and `not gated` carry no threshold: the report says so."""
    text = str(setting if setting is not None else AUTO).strip().lower()
    if text != AUTO:
        value = _number(setting, variable)
        if value == 0:
            return {"threshold_gbps": None, "source": "not gated: {0} is 0".format(variable), "state": NOT_GATED}
        return {"threshold_gbps": value, "source": "explicit " + variable, "state": "explicit"}
    share = _number(fraction, variable.replace("_min_busbw_gbps", "_busbw_fraction"))
    if not 0 < share <= 1:
        raise GateError("{0} must be above 0 and at most 1 (got {1})".format(
            variable.replace("_min_busbw_gbps", "_busbw_fraction"), fraction))
    rate = _positive((link or {}).get("gbps"))
    if rate is None:
        return {"threshold_gbps": None, "source": "not calibrated: " + str((link or {}).get("source") or "no link rate"),
                "state": NOT_CALIBRATED}
    return {"threshold_gbps": round(share * rate / 8, 4),
            "source": "{0} x {1} / 8".format(_num(share), (link or {}).get("source")), "state": "auto"}


def _number(value, variable):
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise GateError("{0} must be auto or a number of GB/s (0: not gated), not {1!r}".format(
            variable, value)) from None
    if number < 0 or math.isnan(number):
        raise GateError("{0} must not be negative (got {1})".format(variable, value))
    return number


def _positive(value):
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


def _num(value):
    return "{0:g}".format(round(float(value), 3))


def plan_gates(settings, ports_by_host, network_facts):
    """Every gate of a run of nccl_validate, decided once for the cluster.

    `settings`: expected_transport, min_busbw_gbps, busbw_fraction, gloo_min_busbw_gbps,
    gloo_busbw_fraction (the role's variables). Returns {transport, multi, gloo}: the multi-node
    NCCL run gated against the fabric (RDMA) or the measured TCP links (socket); Gloo, which
    always runs over TCP, against the measured links."""
    transport = expected_transport(settings.get("expected_transport"), ports_by_host)
    tcp = measured_link(network_facts)
    if transport["transport"] in ("ib", "efa"):
        link = fabric_rate(ports_by_host, transport["transport"])
    elif transport["transport"] == "socket":
        link = tcp
    else:
        link = {"gbps": None, "source": "the expected transport is unknown ({0})".format(transport["source"])}
    return {
        "transport": transport,
        "multi": busbw_gate(settings.get("min_busbw_gbps"), "nccl_validate_min_busbw_gbps",
                            settings.get("busbw_fraction"), link),
        "gloo": busbw_gate(settings.get("gloo_min_busbw_gbps"), "nccl_validate_gloo_min_busbw_gbps",
                           settings.get("gloo_busbw_fraction"), tcp),
    }


# -- the report's view ---------------------------------------------------------------------

# nccl_diagnose's findings for a run that fell back from IB/eRDMA/EFA to sockets (or another provider).
FALLBACK_CODES = ("socket_instead_of_ib", "socket_instead_of_efa")


def gate_rows(run):
    """Each gate of a run record for the report: {name, measured, threshold, source, state}."""
    rows = []
    perf = run.get("perf") or {}
    gate = run.get("busbw_gate")
    if isinstance(gate, dict):
        measured, verdict = _busbw_measured(perf)
        state = gate.get("state")
        if gate.get("threshold_gbps") is not None:
            # The benchmark reader's own verdict on the floor; without one, the comparison.
            passed = verdict if verdict is not None else measured is not None and measured >= gate["threshold_gbps"]
            state = PASSED if passed else FAILED
        rows.append({"name": "busbw (GB/s)", "measured": measured, "threshold": gate.get("threshold_gbps"),
                     "source": gate.get("source"), "state": state})
    transport = run.get("transport_gate")
    if isinstance(transport, dict):
        findings = [f for f in (run.get("diagnosis") or {}).get("findings") or [] if f.get("code") in FALLBACK_CODES]
        expected = transport.get("transport")
        if expected == "any":
            used, state = "not read", NOT_CALIBRATED
        elif findings:
            used, state = "fell back: " + str(findings[0].get("cause")), FAILED
        elif run.get("diagnosis") is None:
            used, state = "not read (no diagnosis)", NOT_CALIBRATED
        else:
            used, state = "no fall-back in NCCL's log", PASSED
        rows.append({"name": "transport", "measured": used, "threshold": _SHOWN.get(expected, expected),
                     "source": transport.get("source"), "state": state})
    return rows


# The busbw floor's gate as nccl_perf (min_busbw_gbps) and nccl_gloo_perf (min_busbw) name it.
_BUSBW_GATES = ("min_busbw_gbps", "min_busbw")


def _busbw_measured(perf):
    """(value, passed) of the busbw gate: nccl_perf's reading at the gated sizes, else the peak
    (the slowest rank's for Gloo); passed None when the reader did not gate it."""
    value = perf.get("peak_busbw_gbps")
    value = value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    for gate in perf.get("gates") or []:
        if gate.get("name") in _BUSBW_GATES:
            measured = gate.get("measured")
            return (measured if isinstance(measured, (int, float)) else value), bool(gate.get("passed"))
    return value, None


def uncalibrated_notes(runs):
    """A note for each gate that could not be calibrated: shown, never counted as a pass."""
    return ["{0}: {1} gate {2}".format(run.get("title") or run.get("name"), row["name"], row["source"])
            for run in runs for row in run.get("gate_rows") or [] if row["state"] == NOT_CALIBRATED]
