"""One MTU for the cluster NIC of every host: which value, and whether every host can take it.

Alibaba Cloud: jumbo frames are an instance attribute. On eRDMA hosts the NIC's MTU must be
exactly 8500 with jumbo frames on and 1400 with them off (another value gives data errors with
NCCL's LL128 protocol); elsewhere 8500 is used where jumbo frames are on and every host's NIC
takes it, and the current MTU stays where whether they are on is unknown.
Pure Python; cloud_alibaba's nccl_mtu_plan filter calls it once for all hosts, before any change.
"""

from __future__ import annotations

JUMBO_MTU = 8500
ERDMA_MTU_JUMBO = 8500
ERDMA_MTU_STANDARD = 1400
STANDARD_MTU = 1500


class MtuPlanError(ValueError):
    """No MTU can be set on every host; the message names the hosts and the fix."""


def target_mtu(wanted, hosts: dict, jumbo_frames) -> int:
    """The MTU for every host's cluster NIC.

    wanted: "auto" or a number (cloud_alibaba_mtu). hosts: {name: {"mtu", "max_mtu", "erdma"}}.
    jumbo_frames: True, False or None (not known: no API answer).
    """
    erdma = sorted(name for name, host in hosts.items() if host.get("erdma"))
    if str(wanted) != "auto":
        try:
            mtu = int(wanted)
        except (TypeError, ValueError):
            raise MtuPlanError(f"cloud_alibaba_mtu is {wanted!r}: give auto or a number such as {JUMBO_MTU}") from None
    elif erdma:
        if jumbo_frames is None:
            raise MtuPlanError(
                f"{', '.join(erdma)} {'has' if len(erdma) == 1 else 'have'} eRDMA, whose MTU must be "
                f"{ERDMA_MTU_JUMBO} with jumbo frames on and {ERDMA_MTU_STANDARD} with them off, and "
                "whether the instances have jumbo frames on is unknown (no ECS API answer): give "
                "credentials for the audit, or set cloud_alibaba_mtu")
        mtu = ERDMA_MTU_JUMBO if jumbo_frames else ERDMA_MTU_STANDARD
    elif jumbo_frames is False:
        mtu = STANDARD_MTU
    elif jumbo_frames is None:
        # Unknown whether the VPC carries jumbo frames: a NIC that takes 8500 proves nothing, so
        # the MTU the hosts run with stays (the smallest, where they differ).
        current = [int(host["mtu"]) for host in hosts.values() if host.get("mtu")]
        mtu = min(current) if current else STANDARD_MTU
    else:
        limits = [host.get("max_mtu") or 0 for host in hosts.values()]
        mtu = JUMBO_MTU if all(limit == 0 or limit >= JUMBO_MTU for limit in limits) else STANDARD_MTU
    return mtu


def plan_problems(mtu: int, hosts: dict, jumbo_frames) -> list:
    """Why `mtu` cannot go on every host; empty when it can. Checked before any host changes."""
    problems = []
    if not 576 <= mtu <= 65535:
        problems.append(f"MTU {mtu} is outside 576-65535")
    too_big = sorted(f"{name} ({host.get('ifname', '?')} takes at most {host['max_mtu']})"
                     for name, host in hosts.items() if host.get("max_mtu") and mtu > host["max_mtu"])
    if too_big:
        problems.append(f"MTU {mtu} is above what the NIC takes on {', '.join(too_big)}: set "
                        "cloud_alibaba_mtu to at most the smallest of these")
    erdma = sorted(name for name, host in hosts.items() if host.get("erdma"))
    if erdma:
        allowed = {True: (ERDMA_MTU_JUMBO,), False: (ERDMA_MTU_STANDARD,)}.get(
            jumbo_frames, (ERDMA_MTU_JUMBO, ERDMA_MTU_STANDARD))
        if mtu not in allowed:
            state = {True: "on", False: "off"}.get(jumbo_frames, "on or off")
            problems.append(f"{', '.join(erdma)} {'has' if len(erdma) == 1 else 'have'} eRDMA: with jumbo "
                            f"frames {state} the MTU must be {' or '.join(map(str, allowed))}, not {mtu} "
                            "(another value gives data errors with NCCL's LL128 protocol)")
    if mtu > STANDARD_MTU and jumbo_frames is False:
        problems.append(f"MTU {mtu} needs jumbo frames, which the instances have off: turn them on "
                        "(cloud_alibaba_mode: apply does) or set cloud_alibaba_mtu to 1500")
    return problems


def mtu_plan(wanted, hosts: dict, jumbo_frames=None) -> dict:
    """{"mtu", "changes": {host: (from, to)}}; raises MtuPlanError naming every problem."""
    mtu = target_mtu(wanted, hosts, jumbo_frames)
    problems = plan_problems(mtu, hosts, jumbo_frames)
    if problems:
        raise MtuPlanError("; ".join(problems) + ". No host was changed.")
    changes = {name: [host.get("mtu"), mtu] for name, host in sorted(hosts.items()) if host.get("mtu") != mtu}
    return {"mtu": mtu, "changes": changes}
