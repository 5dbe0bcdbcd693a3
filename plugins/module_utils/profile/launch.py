"""How a job starts on each host: node ranks, master, slots, the hostfile, what mpirun forwards.

Pure Python (stdlib only). Node ranks follow the order of `hosts` (the inventory's order), so
they are unique and stay the same from run to run; the first host is the master.
"""

from __future__ import annotations

import ipaddress


class LaunchError(ValueError):
    """The cluster's facts give no consistent launch plan."""


def launch_plan(host: str, hosts: list, addresses: dict, slots: dict, master_port) -> dict:
    """torchrun's view of the cluster from `host`: nnodes, node_rank, master, nproc_per_node."""
    problems = plan_problems(hosts, addresses, slots, master_port)
    if host not in hosts:
        problems.insert(0, f"{host} is not one of the cluster's hosts ({', '.join(hosts)})")
    if problems:
        raise LaunchError("; ".join(problems))
    return {
        "nnodes": len(hosts),
        "node_rank": hosts.index(host),
        "master_addr": addresses[hosts[0]],
        "master_port": int(master_port),
        "nproc_per_node": int(slots[host]),
        "world_size": sum(int(slots[name]) for name in hosts),
    }


def plan_problems(hosts: list, addresses: dict, slots: dict, master_port) -> list:
    problems = _host_problems(hosts, addresses, slots)
    port = _whole(master_port)
    if port is None or not 1 <= port <= 65535:
        problems.append(f"the master port {master_port!r} is not a port (1-65535): "
                        "set nccl_profile_master_port")
    return problems


def _host_problems(hosts: list, addresses: dict, slots: dict) -> list:
    """What the hostfile needs: every host with its own cluster address and 1 or more slots."""
    problems = []
    if not hosts:
        problems.append("the cluster has no hosts")
    seen = {}
    for name in hosts:
        address = addresses.get(name)
        try:
            address = str(ipaddress.ip_address(str(address)))
        except ValueError:
            problems.append(f"{name} has no cluster address ({address!r}): run nccl_preflight on "
                            "every host of the play first")
            continue
        if address in seen:
            problems.append(f"{name} and {seen[address]} share the cluster address {address}: "
                            "set nccl_preflight_ifname or nccl_preflight_cluster_cidr")
        seen[address] = name
        count = _whole(slots.get(name))
        if count is None or count < 1:
            problems.append(f"{name} has {slots.get(name)!r} processes per node; it needs 1 or more")
    return problems


def _whole(value):
    """An int from an int or a string of digits (templating may give either); else None."""
    if isinstance(value, bool):
        return None
    try:
        return int(str(value).strip(), 10)
    except ValueError:
        return None


def hostfile_lines(hosts: list, addresses: dict, slots: dict) -> list:
    """Open MPI hostfile lines over the cluster addresses: `10.0.0.11 slots=8`."""
    problems = _host_problems(hosts, addresses, slots)
    if problems:
        raise LaunchError("; ".join(problems))
    return [f"{addresses[name]} slots={int(slots[name])}" for name in hosts]


def uniform_names(envs: list) -> list:
    """Names set to the same value on every host: mpirun -x may forward these from any host.

    A name whose value differs (an interface named differently on one host) is left to each
    host's own profile, which ncclkit-env loads under Open MPI's daemon on that host.
    """
    if not envs:
        return []
    first = envs[0]
    return sorted(name for name, value in first.items()
                  if all(env.get(name) == value for env in envs[1:]))
