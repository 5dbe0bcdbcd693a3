"""Names and addresses of a lab cluster: pure functions of the lab index and node count.

Lab K uses 198.18.K.0/24 for the public side (eth0; the controller is .1 on the public bridge)
and 198.19.K.0/24 for the private side (eth1; the host has no address there). Node i is .(10+i)
on both; the outsider is .250 on the private side only. Everything a lab creates carries K in
its name, so labs with different indices coexist and `down` finds exactly its own objects.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ncclkit.lab.errors import LabError

STATE_ROOT = Path("/run/ncclkit-lab")
MAX_INDEX = 200
FIRST_HOST = 10          # node i is .(FIRST_HOST + i)
OUTSIDER_HOST = 250
MAX_NODES = OUTSIDER_HOST - FIRST_HOST - 1
OUTSIDER = "outsider"
MIN_MTU, MAX_MTU = 576, 65535
IFNAMSIZ = 15            # the kernel's limit on link names
# default: cloud VMs. autodl: containers behind one SSH gateway (docs/lab.md).
PROFILES = ("default", "autodl")
GATEWAY_HOST = 2         # the autodl gateway is 198.18.K.2 on the public bridge
# Inside NCCL's default port range on purpose, as AutoDL's are: the port the controller dials is
# the gateway's, not the host's, and must not trip the firewall's SSH guard.
GATEWAY_FIRST_PORT = 41000
# AutoDL's containers: /dev/shm as small as Docker's default.
AUTODL_SHM_MIB = 64


@dataclass(frozen=True)
class MemberPlan:
    """One namespace of the lab: a cluster node, or the outsider."""

    name: str                 # node<i> or "outsider"; also its hostname
    netns: str
    private_ip: str           # on eth1
    private_link: str         # host side of eth1's veth, on the private bridge
    public_ip: str | None     # on eth0; None for the outsider, which has no eth0
    public_link: str | None   # host side of eth0's veth, on the public bridge

    @property
    def is_outsider(self) -> bool:
        return self.name == OUTSIDER


@dataclass(frozen=True)
class LabPlan:
    """Everything `lab up` creates for lab `index`, before anything exists."""

    index: int
    node_count: int = 2
    outsider: bool = False
    mtu: int = 1500
    profile: str = "default"

    def __post_init__(self) -> None:
        check_index(self.index)
        if self.profile not in PROFILES:
            raise LabError(f"--profile must be one of {', '.join(PROFILES)}, not {self.profile!r}")
        if not 1 <= self.node_count <= MAX_NODES:
            raise LabError(f"--nodes must be between 1 and {MAX_NODES}, not {self.node_count}")
        if not MIN_MTU <= self.mtu <= MAX_MTU:
            raise LabError(f"--mtu must be between {MIN_MTU} and {MAX_MTU}, not {self.mtu}")

    @property
    def public_bridge(self) -> str:
        return f"nk{self.index}pub"

    @property
    def private_bridge(self) -> str:
        return f"nk{self.index}priv"

    @property
    def controller_ip(self) -> str:
        return f"198.18.{self.index}.1"

    @property
    def public_subnet(self) -> str:
        return f"198.18.{self.index}.0/24"

    @property
    def private_subnet(self) -> str:
        return f"198.19.{self.index}.0/24"

    @property
    def gateway(self) -> bool:
        """Whether SSH reaches the nodes through one gateway address (the autodl profile)."""
        return self.profile == "autodl"

    @property
    def gateway_netns(self) -> str:
        return f"ncclkit{self.index}-gateway"

    @property
    def gateway_link(self) -> str:
        return f"nk{self.index}gw"

    @property
    def gateway_ip(self) -> str:
        return f"198.18.{self.index}.{GATEWAY_HOST}"

    def gateway_port(self, member: MemberPlan) -> int:
        """The gateway's port that forwards to `member`'s sshd."""
        return GATEWAY_FIRST_PORT + int(member.name.removeprefix("node"))

    @property
    def nodes(self) -> tuple[MemberPlan, ...]:
        return tuple(node_plan(self.index, i) for i in range(1, self.node_count + 1))

    @property
    def outsider_member(self) -> MemberPlan | None:
        return outsider_plan(self.index) if self.outsider else None

    @property
    def members(self) -> tuple[MemberPlan, ...]:
        """Nodes, then the outsider when there is one."""
        extra = self.outsider_member
        return self.nodes + ((extra,) if extra else ())


def check_index(index: int) -> int:
    if not isinstance(index, int) or not 0 <= index <= MAX_INDEX:
        raise LabError(f"the lab index must be between 0 and {MAX_INDEX}, not {index!r}")
    return index


def node_plan(index: int, i: int) -> MemberPlan:
    host = FIRST_HOST + i
    return MemberPlan(
        name=f"node{i}",
        netns=f"ncclkit{index}-node{i}",
        private_ip=f"198.19.{index}.{host}",
        private_link=f"nk{index}q{i}",
        public_ip=f"198.18.{index}.{host}",
        public_link=f"nk{index}p{i}",
    )


def outsider_plan(index: int) -> MemberPlan:
    return MemberPlan(
        name=OUTSIDER,
        netns=f"ncclkit{index}-{OUTSIDER}",
        private_ip=f"198.19.{index}.{OUTSIDER_HOST}",
        private_link=f"nk{index}qo",
        public_ip=None,
        public_link=None,
    )


def state_dir(index: int) -> Path:
    """Outside every overlaid path (/etc, /opt, /root, /usr/local, /var), so nodes see it too."""
    return STATE_ROOT / str(check_index(index))


# Exact patterns: a prefix test would let lab 1 claim lab 10's objects.
def is_lab_netns(index: int, name: str) -> bool:
    return re.fullmatch(rf"ncclkit{index}-(node[1-9][0-9]*|{OUTSIDER}|gateway)", name) is not None


def is_lab_link(index: int, name: str) -> bool:
    return re.fullmatch(rf"nk{index}(pub|priv|qo|gw|[pq][1-9][0-9]*)", name) is not None
