"""The fault kinds: what each breaks, what it should do to a job, and what check and diagnose should say.

A kind's `inject(lab, ctx)` is made of steps (steps.py) and returns the undo steps it collected;
`ctx` holds the node, the random generator that draws the kind's parameters (recorded with the
fault) and, for job kinds, the hook variables the job on that node is started with. Job kinds
change the node only where a real system would (a cgroup memory limit); the rest of their fault
is in the job (benchmarks/fault_job.py reads the hook variables), never in product code.

`effect` is what the kind does to a small Lightning DDP job over Gloo (fails, hangs, slower,
none); `check` the finding code `ncclkit check` should raise before the job (None: none expected,
check cannot see it); `diagnose` the code `ncclkit diagnose` should put first on the job's logs
(None: no error finding expected). Codes are those of docs/check.md and docs/diagnosis.md.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from ncclkit.lab.errors import LabError
from ncclkit.lab.fault import steps

CLUSTER_IFNAME = "eth1"
PUBLIC_IFNAME = "eth0"
DEFAULT_MASTER_PORT = 29500
TORCHRUN = "/opt/ncclkit/bin/ncclkit-torchrun"
# The profile's files (the nccl_profile role's start paths), as a re-imaged node lacks them.
PROFILE_FILES = ("/etc/profile.d/ncclkit.sh", "/etc/ncclkit/nccl.env", "/etc/nccl.conf",
                 "/opt/ncclkit/bin/ncclkit-env", "/opt/ncclkit/bin/ncclkit-torchrun",
                 "/opt/ncclkit/bin/ncclkit-mpirun")
# Files that carry NCCL_SOCKET_IFNAME (nccl.conf holds NCCL's own variables).
IFNAME_FILES = ("/etc/profile.d/ncclkit.sh", "/etc/ncclkit/nccl.env", "/etc/nccl.conf",
                "/opt/ncclkit/bin/ncclkit-env")


@dataclass
class Context:
    lab: object
    node: str
    rng: random.Random
    params: dict = field(default_factory=dict)   # drawn here, recorded with the fault
    hook: dict = field(default_factory=dict)     # job kinds: variables for the job on `node`
    undo: list = field(default_factory=list)

    def step(self, undo_step: dict) -> None:
        self.undo.append(undo_step)

    @property
    def rank(self) -> int:
        """The node's rank in a one-process-per-node job (node1 is rank 0)."""
        return int(self.node[len("node"):]) - 1


@dataclass(frozen=True)
class FaultKind:
    name: str
    layer: str            # network, host, job
    summary: str
    effect: str           # fails, hangs, slower, none (on a Gloo CPU job)
    check: str | None     # expected `ncclkit check` finding code
    diagnose: str | None  # expected first `ncclkit diagnose` code
    inject: Callable[[Context], None]
    nccl_only: bool = False   # its effect shows on NCCL jobs only (the GPU runs)
    master: bool = False      # the fault belongs on the master (node1) whatever --node says

    def as_row(self) -> dict:
        return {"kind": self.name, "layer": self.layer, "summary": self.summary, "effect": self.effect,
                "check": self.check, "diagnose": self.diagnose, "nccl_only": self.nccl_only}


# ---- helpers that read the node ---------------------------------------------------------------
def port_range(ctx: Context) -> tuple[int, int]:
    text = steps.run(ctx.lab, ctx.node, ["cat", "/proc/sys/net/ipv4/ip_local_port_range"], "reading the port range")
    low, high = (int(v) for v in text.split())
    return low, high


def master_port(ctx: Context) -> int:
    done = ctx.lab.exec(ctx.node, ["cat", TORCHRUN], capture_output=True, text=True)
    # The launcher's command line, not its comment (which shows an override as an example).
    found = re.search(r"^\s*--master-addr \S+ --master-port (\d+)", done.stdout, re.M) if done.returncode == 0 else None
    return int(found.group(1)) if found else DEFAULT_MASTER_PORT


def peer(ctx: Context) -> str:
    names = [info.name for info in ctx.lab.nodes() if info.name != ctx.node]
    if not names:
        raise LabError("this fault needs a second node: bring the lab up with --nodes 2 or more")
    return ctx.rng.choice(names)


def _drop_ports(ctx: Context, verdict: str, extra: str) -> None:
    low, high = port_range(ctx)
    start = low + ctx.rng.randint(0, 64)   # which part of the range: drawn, recorded
    ctx.params.update(ports=f"{start}-{high}", verdict=verdict)
    ctx.step(steps.do_nft_rule(ctx.lab, ctx.node, "input",
                               f"iifname \"{CLUSTER_IFNAME}\" tcp dport {start}-{high} {extra}{verdict}"))


# ---- network ----------------------------------------------------------------------------------
def nccl_ports_rejected(ctx: Context) -> None:
    """The ephemeral range NCCL (and Gloo) listen on, rejected inbound as firewalld rejects."""
    _drop_ports(ctx, "reject with icmpx type admin-prohibited", "")


def gloo_ports_dropped_inbound(ctx: Context) -> None:
    _drop_ports(ctx, "drop", "ct state new ")


def rendezvous_port_dropped(ctx: Context) -> None:
    port = master_port(ctx)
    ctx.params["port"] = port
    ctx.step(steps.do_nft_rule(ctx.lab, ctx.node, "input", f"iifname \"{CLUSTER_IFNAME}\" tcp dport {port} drop"))


def eth1_down(ctx: Context) -> None:
    ctx.step(steps.do_link_down(ctx.lab, ctx.node, CLUSTER_IFNAME))


def mtu_mismatch(ctx: Context) -> None:
    """Two nodes at 9000 on a 1500 bridge: big frames die on the bridge's ports, no ICMP says so."""
    other = peer(ctx)
    ctx.params["nodes"] = [ctx.node, other]
    for name in (ctx.node, other):
        ctx.step(steps.do_mtu(ctx.lab, name, CLUSTER_IFNAME, 9000))


def packet_loss(ctx: Context) -> None:
    percent = ctx.rng.randint(15, 25)
    if steps.qdisc_kind_works(ctx.lab, ctx.node, "netem"):
        ctx.params.update(loss_percent=percent, how="netem")
        ctx.step(steps.do_qdisc(ctx.lab, ctx.node, CLUSTER_IFNAME, ["netem", "loss", f"{percent}%"]))
    else:   # a kernel without sch_netem: the same random loss as an nftables rule
        ctx.params.update(loss_percent=percent, how="nft numgen")
        ctx.step(steps.do_nft_rule(ctx.lab, ctx.node, "input",
                                   f"iifname \"{CLUSTER_IFNAME}\" numgen random mod 100 < {percent} drop"))


def link_throttled(ctx: Context) -> None:
    # Slow enough that the job takes several times as long, not so slow that it outlasts the matrix's
    # job limit (at 2 Mbit/s a 3-node job did: a slow link is then a hang, not the kind's "slower").
    mbit = ctx.rng.choice((5, 10, 20))
    ctx.params["rate_mbit"] = mbit
    ctx.step(steps.do_qdisc(ctx.lab, ctx.node, CLUSTER_IFNAME,
                            ["tbf", "rate", f"{mbit}mbit", "burst", "32kbit", "latency", "400ms"]))


def asymmetric_route(ctx: Context) -> None:
    """Traffic to one peer's cluster address leaves by eth0 (a stale static route): the replies
    to that peer never arrive."""
    other = peer(ctx)
    destination = ctx.lab.node(other).private_ip
    controller = _controller_ip(ctx)
    ctx.params.update(peer=other, destination=destination)
    ctx.step(steps.do_route(ctx.lab, ctx.node, f"{destination}/32", controller, PUBLIC_IFNAME))


def _controller_ip(ctx: Context) -> str:
    return ctx.lab.status()["controller_ip"]


def hostname_public(ctx: Context) -> None:
    """The node's own name first resolves to its public (eth0) address, as cloud-init writes it."""
    info = ctx.lab.node(ctx.node)
    ctx.step(steps.do_edit(ctx.lab, ctx.node, "/etc/hosts",
                           lambda old: f"{info.public_ip}\t{ctx.node}\n" + (old or "")))


def peer_unresolvable(ctx: Context) -> None:
    """A peer's name is missing from the node's /etc/hosts (and the lab has no DNS)."""
    other = peer(ctx)
    ctx.params["peer"] = other
    ctx.step(steps.do_edit(ctx.lab, ctx.node, "/etc/hosts", lambda old: "".join(
        line for line in (old or "").splitlines(True) if other not in line.split()[1:])))


# ---- host -------------------------------------------------------------------------------------
def shm_small(ctx: Context) -> None:
    ctx.step(steps.do_shm_size(ctx.lab, ctx.node, 64))


def memlock_small(ctx: Context) -> None:
    kib = ctx.rng.choice((64, 512, 8192))
    ctx.params["memlock_kib"] = kib
    ctx.step(steps.do_memlock(ctx.lab, ctx.node, kib))


def stale_master_port(ctx: Context) -> None:
    """A real process holds the rendezvous port on the master (a survivor of an earlier job)."""
    port = master_port(ctx)
    ctx.params["port"] = port
    ctx.step(steps.do_listener(ctx.lab, ctx.node, "0.0.0.0", port))


def profile_removed(ctx: Context) -> None:
    for path in PROFILE_FILES:
        ctx.step(steps.do_edit(ctx.lab, ctx.node, path, lambda old: None))


def _set_variable(text: str | None, name: str, value: str) -> str | None:
    if text is None:
        return None
    pattern = re.compile(rf"^(\s*(?:export\s+)?{name}=)('[^']*'|\S*)", re.M)
    if pattern.search(text):
        return pattern.sub(lambda m: m.group(1) + value, text)
    return text


def socket_ifname_missing(ctx: Context) -> None:
    missing = ctx.rng.choice(("eth9", "ens5", "ib0"))
    ctx.params["NCCL_SOCKET_IFNAME"] = "=" + missing
    for path in IFNAME_FILES:
        ctx.step(steps.do_edit(ctx.lab, ctx.node, path,
                               lambda old: _set_variable(old, "NCCL_SOCKET_IFNAME", "=" + missing)))


def nccl_setting_differs(ctx: Context) -> None:
    proto = ctx.rng.choice(("LL", "LL128", "Simple"))
    ctx.params["NCCL_PROTO"] = proto
    ctx.step(steps.do_edit(ctx.lab, ctx.node, "/etc/nccl.conf", lambda old: (old or "") + f"NCCL_PROTO={proto}\n"))


# ---- job: the fault is in one rank; the node only carries what a real one would ---------------------
def _job(action: str) -> Callable[[Context], None]:
    def inject(ctx: Context) -> None:
        step = ctx.rng.randint(1, 3)
        ctx.params.update(rank=ctx.rank, step=step)
        ctx.hook.update(FAULT_JOB=action, FAULT_RANK=str(ctx.rank), FAULT_STEP=str(step))
        if action == "oom":
            mib = ctx.rng.choice((1536, 2048))
            ctx.params["memory_limit_mib"] = mib
            ctx.step(steps.do_memory_cgroup(ctx.lab, ctx.node, mib))
    return inject


KINDS: dict[str, FaultKind] = {kind.name: kind for kind in (
    FaultKind("nccl_ports_rejected", "network", "the ephemeral port range (NCCL's and Gloo's listeners) "
              "rejected inbound on eth1, as firewalld rejects", "fails", "peer_ports_blocked", "no_route",
              nccl_ports_rejected),
    FaultKind("rendezvous_port_dropped", "network", "the rendezvous port dropped inbound on the master",
              "fails", "master_port_blocked", "rendezvous_timeout", rendezvous_port_dropped, master=True),
    FaultKind("gloo_ports_dropped_inbound", "network", "new inbound connections to the ephemeral port range "
              "dropped on eth1 (outbound allowed)", "hangs", "peer_ports_blocked", "connect_timeout",
              gloo_ports_dropped_inbound),
    FaultKind("eth1_down", "network", "the node's cluster NIC eth1 down", "fails", "cluster_nic_down",
              "rendezvous_timeout", eth1_down),
    FaultKind("mtu_mismatch", "network", "two nodes' eth1 at MTU 9000 across the 1500 bridge (oversize frames "
              "dropped, no ICMP)", "hangs", "path_mtu", "hang_in_collective", mtu_mismatch),
    FaultKind("packet_loss", "network", "15-25 % of eth1's inbound packets lost", "slower", None, None,
              packet_loss),
    FaultKind("link_throttled", "network", "eth1 throttled by tbf to 5-20 Mbit/s", "slower", None, None,
              link_throttled),
    FaultKind("asymmetric_route", "network", "a static route sends traffic to one peer's cluster address out "
              "of eth0", "fails", "route_off_cluster", "rendezvous_timeout", asymmetric_route),
    FaultKind("hostname_public", "network", "the node's name resolves first to its public address "
              "(harmless while the profile pins Gloo and NCCL)", "none", "hostname_unreachable", None,
              hostname_public),
    FaultKind("peer_unresolvable", "network", "a peer's name missing from /etc/hosts (harmless while "
              "MASTER_ADDR is an address)", "none", None, None, peer_unresolvable),
    FaultKind("shm_small", "host", "/dev/shm remounted at 64 MiB", "none", "shm_small", None, shm_small),
    FaultKind("memlock_small", "host", "ulimit -l of the node's sshd (every login and job) made small",
              "none", None, None, memlock_small),
    FaultKind("stale_master_port", "host", "a stale process listening on the rendezvous port on the master",
              "fails", "master_port_in_use", "address_in_use", stale_master_port, master=True),
    FaultKind("profile_removed", "host", "the nccl_profile files gone from one node (re-imaged): Gloo unpinned",
              "hangs", "gloo_unpinned", "hang_in_rendezvous", profile_removed),
    FaultKind("socket_ifname_missing", "host", "NCCL_SOCKET_IFNAME names a NIC the node lacks", "none",
              "socket_ifname_wrong", None, socket_ifname_missing, nccl_only=True),
    FaultKind("nccl_setting_differs", "host", "NCCL_PROTO set in /etc/nccl.conf of one node only (none on the Gloo "
              "job; an NCCL job's first all-reduce fails: nccl_setting_mismatch, measured on an H100)", "none",
              None, None, nccl_setting_differs, nccl_only=True),
    FaultKind("rank_stopped", "job", "one rank stopped by SIGSTOP mid-training", "hangs", None,
              "hang_in_collective", _job("stop")),
    FaultKind("rank_killed", "job", "one rank killed by SIGKILL mid-training", "fails", None, "rank_killed",
              _job("kill")),
    FaultKind("rank_oom_killed", "job", "the node under a 1.5-2 GiB memory limit (a container's); one rank "
              "outgrows it and is OOM-killed", "fails", None,
              "oom_killed", _job("oom")),
    FaultKind("rank_exception", "job", "a Python exception in one rank", "fails", None, "rank_exception",
              _job("exception")),
    FaultKind("collective_desync", "job", "one rank skips one collective", "fails", None, "collective_desync",
              _job("desync")),
    FaultKind("rank_straggler", "job", "one rank 10x slower per step", "slower", None, None, _job("straggler")),
)}
