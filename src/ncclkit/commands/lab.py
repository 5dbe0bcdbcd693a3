"""`ncclkit lab up|status|down|exec`: the lab cluster from the shell."""

from __future__ import annotations

import argparse
import json
import sys
import time

from ncclkit.lab.errors import LabError
from ncclkit.lab.plan import MAX_INDEX


def register(subparsers: argparse._SubParsersAction) -> None:
    lab = subparsers.add_parser(
        "lab", help="a local practice cluster of Linux namespaces (root)",
        description="A local practice cluster: nodes made of Linux namespaces, with eth0 on a "
                    "public bridge (node-to-node traffic dropped) and eth1 on a private one.")
    commands = lab.add_subparsers(dest="lab_command", metavar="LAB_COMMAND", required=True)

    up = commands.add_parser("up", help="bring the lab up and write its inventory")
    _add_index(up)
    up.add_argument("--nodes", type=int, default=2, help="number of nodes (default: 2)")
    up.add_argument("--outsider", action="store_true",
                    help="add a host outside the cluster on the private network")
    up.add_argument("--mtu", type=int, default=1500, help="MTU of eth1 (default: 1500)")
    up.add_argument("--profile", choices=("default", "autodl"), default="default",
                    help="default: cloud VMs; autodl: AutoDL-like containers behind one SSH "
                         "gateway address (PID 1 not systemd, read-only /proc/sys, no "
                         "CAP_NET_ADMIN, 64 MiB /dev/shm)")
    up.add_argument("--inventory", metavar="PATH",
                    help="where to write the inventory (default: inventories/lab/hosts.yml "
                         "in the checkout holding the current directory)")
    up.set_defaults(handler=_guarded(_up))

    status = commands.add_parser("status", help="show the lab's nodes and health")
    _add_index(status)
    status.add_argument("--json", action="store_true", help="print the status as JSON")
    status.set_defaults(handler=_guarded(_status))

    down = commands.add_parser("down", help="remove everything the lab made")
    _add_index(down)
    down.set_defaults(handler=_guarded(_down))

    run = commands.add_parser(
        "exec", help="run a command inside a node (default: a login shell)",
        usage="ncclkit lab exec NODE [--index K] [-- CMD...]")
    run.add_argument("node", metavar="NODE", help="node1..nodeN or outsider")
    _add_index(run)
    run.add_argument("command_argv", nargs="*", metavar="CMD",
                     help="command and arguments, after -- (see ncclkit.cli)")
    run.set_defaults(handler=_guarded(_exec))

    _register_fault(commands)


def _register_fault(commands: argparse._SubParsersAction) -> None:
    fault = commands.add_parser(
        "fault", help="inject a fault into the lab as real clusters have it, clear it, list the kinds",
        description="Break the lab the way real clusters break (a firewall rule, a link down, a stale "
                    "process, ...) and undo exactly that. Lab only, root only.")
    verbs = fault.add_subparsers(dest="fault_command", metavar="FAULT_COMMAND", required=True)
    inject = verbs.add_parser("inject", help="inject fault KIND into one node")
    inject.add_argument("kind", metavar="KIND", help="a kind `ncclkit lab fault list` shows")
    inject.add_argument("--node", help="node1..nodeN (default: drawn at random; master kinds: node1)")
    inject.add_argument("--seed", type=int, help="seed of the random parameters (default: drawn, and printed)")
    _add_index(inject)
    inject.add_argument("--json", action="store_true", help="print the fault's record as JSON")
    inject.set_defaults(handler=_guarded(_fault_inject))
    clear = verbs.add_parser("clear", help="undo every fault injected into the lab")
    _add_index(clear)
    clear.set_defaults(handler=_guarded(_fault_clear))
    listing = verbs.add_parser("list", help="the kinds (expected effect, check and diagnose codes) and "
                                            "what is injected now")
    _add_index(listing)
    listing.add_argument("--json", action="store_true", help="print kinds and injected faults as JSON")
    listing.set_defaults(handler=_guarded(_fault_list))


def _add_index(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--index", type=int, default=0, metavar="K",
                        help=f"which lab (0-{MAX_INDEX}; default: 0): picks names and subnets")


def _guarded(handler):
    """LabError -> one line on stderr and its exit code (2: not root or a tool missing)."""
    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except LabError as error:
            print(f"ncclkit lab: {error}" if not str(error).startswith("ncclkit lab")
                  else str(error), file=sys.stderr)
            return error.exit_code
    return run


def _fault_inject(args: argparse.Namespace) -> int:
    from ncclkit.lab.fault import inject
    record = inject(_lab(args), args.kind, node=args.node, seed=args.seed)
    if args.json:
        print(json.dumps(record, indent=2))
        return 0
    params = ", ".join(f"{key}={value}" for key, value in record["params"].items())
    print(f"injected {record['kind']} on {record['node']} (seed {record['seed']}{', ' + params if params else ''})")
    if record["hook"]:
        print("start the job on {} with: {}".format(
            record["node"], " ".join(f"{key}={value}" for key, value in record["hook"].items())))
    return 0


def _fault_clear(args: argparse.Namespace) -> int:
    from ncclkit.lab.fault import clear
    cleared = clear(_lab(args))
    print(f"lab {args.index}: cleared {len(cleared)} fault(s)"
          + (": " + ", ".join(f"{r['kind']} on {r['node']}" for r in cleared) if cleared else ""))
    return 0


def _fault_list(args: argparse.Namespace) -> int:
    from ncclkit.lab.fault import KINDS, injected
    from ncclkit.lab.lab import Lab
    lab = Lab(args.index)
    now = injected(lab) if lab.state_dir.exists() else []
    rows = [kind.as_row() for kind in KINDS.values()]
    if args.json:
        print(json.dumps({"kinds": rows, "injected": now}, indent=2))
        return 0
    print(f"{'KIND':<27} {'LAYER':<8} {'EFFECT':<7} {'CHECK':<21} DIAGNOSE")
    for row in rows:
        print(f"{row['kind']:<27} {row['layer']:<8} {row['effect']:<7} {row['check'] or '-':<21} "
              f"{row['diagnose'] or '-'}{'  (NCCL only)' if row['nccl_only'] else ''}")
    for record in now:
        print(f"injected in lab {args.index}: {record['kind']} on {record['node']} {record['params']}")
    return 0


def _lab(args: argparse.Namespace):
    from ncclkit.lab.lab import Lab
    return Lab(args.index)


def _up(args: argparse.Namespace) -> int:
    lab = _lab(args)
    started = time.monotonic()
    built = lab.up(nodes=args.nodes, outsider=args.outsider, mtu=args.mtu,
                   inventory_path=args.inventory, profile=args.profile)
    status = lab.status()
    what = _members_text(status)
    if built:
        print(f"lab {lab.index} is up: {what} in {time.monotonic() - started:.1f} s")
    else:
        print(f"lab {lab.index} is already up ({what}): nothing to do")
    print(f"inventory: {status['inventory']}")
    return 0


def _down(args: argparse.Namespace) -> int:
    lab = _lab(args)
    started = time.monotonic()
    if lab.down():
        print(f"lab {lab.index} is down ({time.monotonic() - started:.1f} s)")
    else:
        print(f"lab {lab.index}: nothing to remove")
    return 0


def _status(args: argparse.Namespace) -> int:
    status = _lab(args).status()
    if args.json:
        print(json.dumps(status, indent=2))
    else:
        print(format_status(status))
    return 0 if status["healthy"] else 1


def _members_text(status: dict) -> str:
    count = status["node_count"]
    return f"{count} node{'s' if count != 1 else ''}{' + outsider' if status['outsider'] else ''}"


def format_status(status: dict) -> str:
    index = status["index"]
    if status["state"] == "down":
        return f"lab {index}: down"
    lines = [f"lab {index}: {status['state']}"]
    if "node_count" in status:
        lines[0] += f", {_members_text(status)}, eth1 MTU {status['mtu']}"
        lines += [
            f"  public  (eth0) {status['public_subnet']} on {status['public_bridge']}, "
            f"controller {status['controller_ip']}",
            f"  private (eth1) {status['private_subnet']} on {status['private_bridge']}",
            *([f"  profile {status['profile']}: SSH through the gateway {status['gateway']}"]
              if status.get("gateway") else []),
            f"  inventory {status['inventory']}"
            f"{'' if status['inventory_exists'] else ' (missing)'}",
            f"  ssh key {status['ssh_key']}",
            "",
            f"  {'NAME':<10} {'PUBLIC':<16} {'PRIVATE':<16} {'PID':>8}  HEALTH",
        ]
        members = status["nodes"] + ([status["outsider"]] if status["outsider"] else [])
        for member in members:
            health = ("running" if member["running"] else "not running")
            if member["ssh"] is not None:
                health += ", ssh ok" if member["ssh"] else ", ssh down"
            lines.append(f"  {member['name']:<10} {member['public_ip'] or '-':<16} "
                         f"{member['private_ip']:<16} {member['pid'] or '-':>8}  {health}")
    lines += [f"  problem: {problem}" for problem in status["problems"]]
    return "\n".join(lines)


def _exec(args: argparse.Namespace) -> int:
    argv = args.command_argv or ["/bin/bash", "-l"]
    try:
        return _lab(args).exec(args.node, argv).returncode
    except KeyboardInterrupt:
        return 130
    except FileNotFoundError as error:
        raise LabError(f"cannot run {argv[0]}: {error}") from error
