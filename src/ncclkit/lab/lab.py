"""`Lab`: bring a lab cluster up, look at it, run commands in its nodes, take it down."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from ncclkit.lab import inventory, netns, node, preflight, rootfs, sshd
from ncclkit.lab.errors import LabError
from ncclkit.lab.plan import OUTSIDER, LabPlan, MemberPlan, check_index
from ncclkit.lab.state import StateDir

SSHD_PRIVSEP_DIR = Path("/run/sshd")


@dataclass(frozen=True)
class NodeInfo:
    """One running member of a lab. `public_ip` is None for the outsider (it has no eth0)."""

    name: str            # node1..nodeN or "outsider"; also its hostname
    netns: str
    public_ip: str | None
    private_ip: str
    pid: int             # the holder (sshd; `sleep` for the outsider): `nsenter -t pid` enters it

    @property
    def hostname(self) -> str:
        return self.name


class Lab:
    """The lab cluster with index `index` (0-200), which picks its names and subnets.

    Every method that touches the system needs root. Errors are `LabError` (one line saying
    what to do); `LabPrerequisiteError` (a subclass) when root or a tool is missing.
    """

    def __init__(self, index: int = 0):
        self.index = check_index(index)
        self.state_dir = StateDir(self.index)

    def __repr__(self) -> str:
        return f"Lab(index={self.index})"

    # ---- paths the controller needs -----------------------------------------------------
    @property
    def ssh_key(self) -> Path:
        """The controller's private key; root on every node accepts it."""
        return self.state_dir.ssh_key

    @property
    def known_hosts(self) -> Path:
        """known_hosts for every node's public address (and name)."""
        return self.state_dir.known_hosts

    @property
    def inventory_path(self) -> Path | None:
        """The inventory `up` wrote, or None when the lab is not up."""
        state = self.state_dir.read()
        return Path(state["inventory"]) if state else None

    # ---- up / down ----------------------------------------------------------------------
    def up(self, nodes: int = 2, outsider: bool = False, mtu: int = 1500,
           inventory_path: str | os.PathLike | None = None, profile: str = "default") -> bool:
        """Bring the lab up with `nodes` nodes (plus the outsider), eth1 MTU `mtu`, and write the
        inventory (default: inventories/lab/hosts.yml in the checkout holding the cwd).

        Returns True when it built the lab, False when an identical healthy lab was already up
        (then it only rewrites a missing or moved inventory). `profile` "autodl" makes nodes
        like AutoDL's containers, reached through one SSH gateway address (docs/lab.md). A lab that is up with other
        settings, or unhealthy, is an error: run `down` first. A failure half-way removes
        everything this call made before raising.
        """
        tools = preflight.require(preflight.UP_TOOLS)
        plan = LabPlan(self.index, nodes, outsider, mtu, profile)
        inventory_path = (Path(inventory_path).absolute() if inventory_path
                          else inventory.default_path())
        with self.state_dir.locked():
            state = self.state_dir.read()
            if state and state.get("status") == "up":
                self._keep(state, plan, inventory_path)
                return False
            if state or self._leftovers():
                self._teardown(state)   # what a killed or crashed `up` left
            self._check_inventory_free(inventory_path)
            try:
                self._build(plan, inventory_path, tools)
            except BaseException as error:
                try:
                    self._teardown(self.state_dir.read())
                except LabError as cleanup:
                    raise LabError(f"lab up failed: {error}; and cleaning up failed too: "
                                   f"{cleanup}") from error
                if isinstance(error, (LabError, KeyboardInterrupt, SystemExit)):
                    raise
                raise LabError(f"lab up failed: {error}") from error
        return True

    def down(self) -> bool:
        """Remove every process, namespace, link, file and the inventory of this lab.

        Returns False (and does nothing) when nothing of it exists.
        """
        preflight.require(preflight.DOWN_TOOLS)
        with self.state_dir.locked():
            state = self.state_dir.read()
            if not state and not self._leftovers():
                return False
            self._teardown(state)
        return True

    # ---- looking at it ------------------------------------------------------------------
    def status(self) -> dict:
        """What is up and whether it is healthy, as a JSON-ready dict.

        Always: index, state ("up", "starting", "broken" or "down"), healthy, problems (lines),
        state_dir, nodes (dicts: name, hostname, netns, public_ip, private_ip, pid, running,
        ssh), outsider (such a dict, or None). When the lab exists, also: node_count, mtu,
        inventory, inventory_exists, ssh_key, known_hosts, controller_ip, public_subnet,
        private_subnet, public_bridge, private_bridge, created_at.
        """
        preflight.require_root()
        state = self.state_dir.read()
        if not state:
            leftovers = netns.lab_namespaces(self.index) + netns.lab_links(self.index)
            return {"index": self.index, "state": "broken" if leftovers else "down",
                    "healthy": False, "state_dir": str(self.state_dir.path),
                    "problems": [f"left over without state: {', '.join(leftovers)}"]
                    if leftovers else [], "nodes": [], "outsider": None}
        plan = _plan_of(state)
        problems, members = self._check(state)
        inventory_path = Path(state["inventory"])
        return {
            "index": self.index,
            "state": "broken" if problems and state["status"] == "up" else state["status"],
            "healthy": state["status"] == "up" and not problems,
            "problems": problems,
            "node_count": plan.node_count,
            "mtu": plan.mtu,
            "profile": plan.profile,
            "gateway": f"{plan.gateway_ip} ({plan.gateway_netns})" if plan.gateway else None,
            "inventory": str(inventory_path),
            "inventory_exists": inventory.written_by_lab(inventory_path) == self.index,
            "state_dir": str(self.state_dir.path),
            "ssh_key": str(self.ssh_key),
            "known_hosts": str(self.known_hosts),
            "controller_ip": plan.controller_ip,
            "public_subnet": plan.public_subnet,
            "private_subnet": plan.private_subnet,
            "public_bridge": plan.public_bridge,
            "private_bridge": plan.private_bridge,
            "created_at": state.get("created_at"),
            "nodes": [m for m in members if m["name"] != OUTSIDER],
            "outsider": next((m for m in members if m["name"] == OUTSIDER), None),
        }

    def nodes(self, include_outsider: bool = False) -> list[NodeInfo]:
        """The running nodes, node1 first; the outsider last when asked for.

        Raises LabError when the lab is not up (so do node, command, exec and ssh_command).
        """
        return [NodeInfo(**{key: member[key] for key in
                            ("name", "netns", "public_ip", "private_ip", "pid")})
                for member in self._running_state()["members"]
                if include_outsider or member["name"] != OUTSIDER]

    def node(self, name: str | int) -> NodeInfo:
        """One member by name ("node1", "outsider") or number (1 or "1" is node1)."""
        wanted = f"node{name}" if str(name).isdigit() else name
        for info in self.nodes(include_outsider=True):
            if info.name == wanted:
                return info
        raise LabError(f"lab {self.index} has no {wanted}")

    # ---- running things in it -----------------------------------------------------------
    def command(self, node_name: str | int, argv: Sequence[str] | str) -> list[str]:
        """The argv that runs `argv` inside a node's network, UTS and mount namespaces, cwd /.

        A string is run by `sh -c`. Use it with subprocess.Popen for background processes.
        """
        if isinstance(argv, str):
            argv = ["sh", "-c", argv]
        pid = self.node(node_name).pid
        # A container node's holder is PID 1 of its own PID namespace: enter that one too.
        pid_ns = ["-p"] if netns.process_pid_namespace(pid) != netns.process_pid_namespace(os.getpid()) else []
        return ["nsenter", "-t", str(pid), "-n", "-u", "-m", *pid_ns, "--wd=/", "--", *argv]

    def exec(self, node_name: str | int, argv: Sequence[str] | str,
             **subprocess_kwargs) -> subprocess.CompletedProcess:
        """subprocess.run(`command(node, argv)`, **subprocess_kwargs); check=False by default."""
        preflight.require(preflight.EXEC_TOOLS)
        # check= comes with the caller's subprocess_kwargs (False when not given).
        return subprocess.run(self.command(node_name, argv), **subprocess_kwargs)  # pylint: disable=subprocess-run-check

    def ssh_command(self, node_name: str | int, argv: Sequence[str] = ()) -> list[str]:
        """ssh as root with the lab's key to a node's public address, as the controller does."""
        info = self.node(node_name)
        if not info.public_ip:
            raise LabError(f"{info.name} has no public address: the controller cannot ssh to it")
        return ["ssh", "-F", "/dev/null", "-i", str(self.ssh_key), "-o", "IdentitiesOnly=yes",
                "-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
                *sshd.ssh_options(self.state_dir), f"root@{info.public_ip}", *argv]

    # ---- inside -------------------------------------------------------------------------
    def _running_state(self) -> dict:
        state = self.state_dir.read()
        if not state or state.get("status") != "up":
            raise LabError(f"lab {self.index} is not up: run `ncclkit lab up --index {self.index}`")
        return state

    def _leftovers(self) -> bool:
        return bool(netns.lab_namespaces(self.index) or netns.lab_links(self.index)
                    or self.state_dir.exists())

    def _build(self, plan: LabPlan, inventory_path: Path, tools: dict[str, str]) -> None:
        state = {
            "index": plan.index, "status": "starting", "node_count": plan.node_count,
            "outsider": plan.outsider, "mtu": plan.mtu, "profile": plan.profile,
            "inventory": str(inventory_path),
            "sshd": os.path.realpath(tools["sshd"]),
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "members": [asdict(member) | {"pid": None} for member in plan.members],
        }
        self.state_dir.create()
        self.state_dir.write(state)   # from here on, `down` knows which inventory is ours
        keygen = sshd.start_keygen(self.state_dir)
        try:
            netns.create(plan)
        finally:
            sshd.finish_keygen(keygen)
        for member in plan.members:
            rootfs.prepare(self.state_dir, plan, member)
        sshd.write_files(self.state_dir, plan)
        SSHD_PRIVSEP_DIR.mkdir(mode=0o755, exist_ok=True)   # sshd's own, as its package makes it
        sshd.check_config(self.state_dir, state["sshd"])
        pids = node.start_holders(self.state_dir, plan, state["sshd"])
        for member in state["members"]:
            member["pid"] = pids[member["name"]]
        self.state_dir.write(state)
        node.wait_ready(self.state_dir, plan, pids, state["sshd"])
        if plan.gateway:
            node.wait_gateway(plan)
        inventory.write(inventory_path, plan, self.state_dir)
        self.state_dir.write(state | {"status": "up"})

    def _keep(self, state: dict, plan: LabPlan, inventory_path: Path) -> None:
        """`up` on a lab that is up: fine if it is the same lab and healthy, else say what to do."""
        running = _plan_of(state)
        if running != plan:
            raise LabError(
                f"lab {self.index} is up with {_describe(running)}, not {_describe(plan)}: "
                f"run `ncclkit lab down --index {self.index}` first")
        problems, dummy = self._check(state)
        if problems:
            raise LabError(f"lab {self.index} is up but broken ({problems[0]}): "
                           f"run `ncclkit lab down --index {self.index}` and up again")
        old_inventory = Path(state["inventory"])
        if old_inventory != inventory_path:
            self._check_inventory_free(inventory_path)
            inventory.write(inventory_path, plan, self.state_dir)
            inventory.remove(old_inventory, self.index)
            self.state_dir.write(state | {"inventory": str(inventory_path)})
        elif inventory.written_by_lab(inventory_path) != self.index:
            inventory.write(inventory_path, plan, self.state_dir)

    def _check(self, state: dict) -> tuple[list[str], list[dict]]:
        """What is wrong with a lab that has state, and a report on each member."""
        plan = _plan_of(state)
        links = set(netns.lab_links(self.index))
        problems = [f"bridge {name} is missing" for name in (plan.public_bridge,
                                                             plan.private_bridge)
                    if name not in links]
        reports = []
        for member in state["members"]:
            if member["pid"]:
                problem = node.holder_problem(_member_plan(member), member["pid"], state["sshd"])
            else:
                problem = f"{member['name']} has not started"
            running = problem is None
            ssh = None
            if member["public_ip"]:
                ssh = running and node.ssh_port_open(member["public_ip"])
                if running and not ssh:
                    problem = (f"{member['name']}'s sshd does not answer on "
                               f"{member['public_ip']}:22")
            if problem:
                problems.append(problem)
            reports.append({key: member[key] for key in
                            ("name", "netns", "public_ip", "private_ip", "pid")}
                           | {"hostname": member["name"], "running": running, "ssh": ssh})
        return problems, reports

    def _check_inventory_free(self, path: Path) -> None:
        owner = inventory.written_by_lab(path)
        if owner is not None and owner != self.index and StateDir(owner).state_file.exists():
            raise LabError(f"{path} is the inventory of lab {owner}, which is up: "
                           f"pass another --inventory")

    def _teardown(self, state: dict | None) -> None:
        sshd.stop_control_masters(self.state_dir)   # first, while the nodes can hear goodbye
        netns.destroy(self.index)
        if state and state.get("inventory"):
            inventory.remove(Path(state["inventory"]), self.index)
        self.state_dir.remove()


def _member_plan(member: dict) -> MemberPlan:
    return MemberPlan(**{key: member[key] for key in MemberPlan.__dataclass_fields__})


def _plan_of(state: dict) -> LabPlan:
    return LabPlan(state["index"], state["node_count"], state["outsider"], state["mtu"],
                   state.get("profile", "default"))


def _describe(plan: LabPlan) -> str:
    return (f"{plan.node_count} node{'s' if plan.node_count != 1 else ''}"
            f"{' + outsider' if plan.outsider else ''}, MTU {plan.mtu}"
            f"{', profile ' + plan.profile if plan.profile != 'default' else ''}")
