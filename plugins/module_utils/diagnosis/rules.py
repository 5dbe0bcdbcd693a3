"""What a log line means: a table of rules (pattern -> code, severity, cause, fix), and the
findings that need the whole log (NICs outside the cluster network, versions, transports).

Pure Python 3.8+ standard library. Codes are stable: playbooks and tests match on them.
Causes and fixes are templates over the pattern's named groups; {peer} is the address and port
of the other side as the line names it.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import re
from typing import Dict, Iterable, List, NamedTuple, Optional, Pattern

from ansible_collections.ncclkit.cluster.plugins.module_utils.network.cluster_nic import VIRTUAL_NIC_PATTERNS
from .lines import parse_address

# A fault of the GPU while it ran a rank's kernels, in NCCL's lines or in the rank's own exception, and its fix.
GPU_FAULT_WORDS = ("illegal memory access", "unspecified launch failure", "uncorrectable ECC", "misaligned address",
                   "illegal instruction")
FIX_GPU_FAULT = ("run that rank with CUDA_LAUNCH_BLOCKING=1 (and compute-sanitizer) to find the kernel and its input; "
                 "check `dmesg -T | grep -i xid` and `nvidia-smi -q -d ECC` on that host: Xid 48, 63, 64, 79, 94, 95 "
                 "or ECC errors mean the GPU is at fault (take it out of the job)")
# CUDA error 802: what it means on the hosts that have it, and the fix (a rank's exception says it too).
CAUSE_FABRIC_MANAGER = ("on NVSwitch systems (HGX/DGX A100, H100, H200) the NVIDIA Fabric Manager is not running or "
                        "does not match the driver")
FIX_FABRIC_MANAGER = ("start it with `systemctl enable --now nvidia-fabricmanager` (the package version must equal the "
                      "driver version); check `nvidia-smi -q | grep -i fabric`")

SEVERITIES = ("error", "warning", "info")

FIX_NIC = ("set NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME to the NIC on the cluster (private) network, "
           "e.g. NCCL_SOCKET_IFNAME=eth1 GLOO_SOCKET_IFNAME=eth1 on AutoDL (see `ip -br addr`)")
FIX_PORTS = ("allow TCP between the cluster hosts on 32768-60999 (the ephemeral ports NCCL listens on) "
             "and on the master port (MASTER_PORT, e.g. 29500), in the host firewall and in the cloud "
             "security group (AWS: a rule that admits the group itself); check with `nc -zv <peer> <port>`")
FIX_RENDEZVOUS = ("start every node with the same --nnodes, --rdzv_id and --rdzv_endpoint (or MASTER_ADDR/"
                  "MASTER_PORT) set to the master's cluster address, and open that port between the hosts")
FIX_LOOK_FIRST = ("read the findings above this one: they name the cause; if there are none, rerun with "
                  "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET and read the first NCCL WARN")
FIX_INTERNAL = ("check the network first: " + FIX_NIC + ", NCCL_IB_DISABLE=1 where "
                "there is no InfiniBand, and open the ports between the hosts; then rerun with NCCL_DEBUG=INFO")


class Rule(NamedTuple):
    code: str
    severity: str
    needles: tuple         # substrings, one of which every matching line contains: a cheap test first
    pattern: Pattern
    cause: str
    fix: str
    escalate: Optional[str] = None  # expected_transport under which this becomes an error
    own: bool = False      # a fault of the rank's own host (a GPU's Xid): a root cause like a rank's exception


def _rule(code, severity, needles, pattern, cause, fix, escalate=None, own=False):
    needles = (needles,) if isinstance(needles, str) else tuple(needles)
    return Rule(code, severity, needles, re.compile(pattern), cause, fix, escalate, own)


# Every code may match a line once: the first of its rules wins, so specific rules come before
# general ones. An NCCL WARN line that no rule matches becomes an nccl_warning. The order of the
# findings in a result is PRIORITY's, not this table's.
RULES = (
    _rule("no_socket_interface", "error", "no socket interface found",
          r"Bootstrap ?: no socket interface found",
          "NCCL found no network interface to use: NCCL_SOCKET_IFNAME names no interface that has an "
          "address on this host (or the host has only loopback and virtual interfaces)",
          "set NCCL_SOCKET_IFNAME to the cluster NIC, e.g. NCCL_SOCKET_IFNAME=eth1 (see `ip -br addr`), "
          "or unset it to let NCCL choose"),
    _rule("no_socket_interface", "error", "NCCL_SOCKET_IFNAME interface found",
          r"no NCCL_SOCKET_IFNAME interface found",
          "NCCL_SOCKET_IFNAME names no interface that has an address on this host",
          "set NCCL_SOCKET_IFNAME to the cluster NIC, e.g. NCCL_SOCKET_IFNAME=eth1 (see `ip -br addr`)"),
    _rule("no_socket_interface", "error", "is neither AF_INET",
          r"connecting to address\s+with family \d+ is neither AF_INET",
          "NCCL_SOCKET_IFNAME names no interface that has an address on this host (NCCL 2.27 reports "
          "it as an address of unknown family instead of 'no socket interface found')",
          "set NCCL_SOCKET_IFNAME to the cluster NIC, e.g. NCCL_SOCKET_IFNAME=eth1 (see `ip -br addr`)"),
    # A peer's address of a family this host cannot open (an IPv6 bootstrap address on an IPv4-only host):
    # diagnosis.log names the host whose NCCL_SOCKET_FAMILY differs, where one does.
    _rule("connect_failed", "error", "Address family not supported",
          r"Socket creation failed : Address family not supported by protocol",
          "NCCL could not open a socket of the address family a peer advertised (Address family not supported "
          "by protocol): the hosts use different families (IPv6 on one, IPv4 on the others)",
          "give every host one address family: unset NCCL_SOCKET_FAMILY (or set it alike everywhere) and pin "
          "NCCL_SOCKET_IFNAME to a NIC with an address of that family on every host"),
    _rule("no_socket_interface", "error", "Unable to find address for",
          r"Unable to find address for:? (?P<ifname>\S+)",
          "GLOO_SOCKET_IFNAME={ifname} names no interface that has an address on this host",
          "set GLOO_SOCKET_IFNAME (and NCCL_SOCKET_IFNAME) to the cluster NIC, e.g. eth1"),

    # NCCL's own check at init; the host with the odd version is found from every such line (diagnosis.log).
    _rule("nccl_version_mismatch", "error", "Mismatched NCCL version",
          r"Mismatched NCCL version detected : rank (?P<a>\d+) version (?P<va>\d+) rank (?P<b>\d+) version (?P<vb>\d+)",
          "NCCL found ranks of one job running different NCCL versions (rank {a}: {va}, rank {b}: {vb}; "
          "22703 is 2.27.3): they cannot form a communicator",
          "install one NCCL (and one torch build) on every host: the same image or environment everywhere; "
          "`python -c 'import torch; print(torch.cuda.nccl.version())'` and `ldconfig -p | grep nccl` on each"),
    _rule("duplicate_gpu", "error", "Duplicate GPU detected",
          r"Duplicate GPU detected : rank (?P<rank>\d+) and rank (?P<other>\d+) both on CUDA device (?P<bus>\w+)",
          "ranks {rank} and {other} run on the same GPU (bus id {bus}; NCCL: Duplicate GPU detected): more "
          "processes on this host than GPUs, or the processes do not each select their own GPU",
          "start one process per GPU (torchrun --nproc_per_node = GPUs per host) and call "
          "torch.cuda.set_device(LOCAL_RANK) before init_process_group; to simulate several nodes on one "
          "GPU give each rank its own NCCL_HOSTID"),

    _rule("connect_refused", "error", "onnection refused",
          r"[Cc]onnect to (?P<peer>\S+) (?:failed : |returned (?:\d+\()?)Connection refused(?!, retrying)",
          "the connection to {peer} was refused: nothing listens there (the peer process is gone or "
          "listens on another NIC) or a firewall rejects the port",
          FIX_PORTS),
    _rule("connect_refused", "error", "onnection refused",
          r"Call to connect(?: to (?P<peer>\S+))? failed : Connection refused",
          "a connection to a peer{at} was refused: nothing listens there (the peer process is gone or listens "
          "on another NIC) or a firewall rejects the port",
          FIX_PORTS),
    _rule("connect_refused", "error", "onnection refused",
          r"connect returned Connection refused, exceeded",
          "NCCL gave up connecting to a peer that refused every attempt: nothing listens on the address "
          "it advertised (wrong NIC) or a firewall rejects the port",
          FIX_PORTS + "; " + FIX_NIC),
    _rule("connect_refused", "warning", "onnection refused",
          r"client socket has failed to connect to (?P<peer>\S+) \(errno: 111",
          "torch could not reach the rendezvous store at {peer} (refused); it retries until its timeout: "
          "the master is not started yet, or MASTER_ADDR/MASTER_PORT is wrong",
          FIX_RENDEZVOUS),

    _rule("connect_timeout", "error", "timed out",
          r"[Cc]onnect to (?P<peer>\S+) (?:failed : |returned (?:\d+\()?)Connection timed out(?!, retrying)",
          "the connection to {peer} timed out: packets to that port are dropped (firewall or cloud "
          "security group) or the address is on a network this host cannot reach",
          FIX_PORTS),
    _rule("connect_timeout", "error", "timed out",
          r"Call to connect(?: to (?P<peer>\S+))? failed : Connection timed out",
          "a connection to a peer{at} timed out: packets to that port are dropped (firewall or cloud security "
          "group) or the address is on a network this host cannot reach",
          FIX_PORTS),
    _rule("connect_timeout", "error", "timed out",
          r"error Connection timed out.*connect to (?P<peer>\S+)",
          "the connection to {peer} timed out: packets to that port are dropped (firewall or cloud "
          "security group) or the address is on a network this host cannot reach",
          FIX_PORTS),
    _rule("connect_timeout", "error", "timed out",
          r"connect returned Connection timed out, exceeded",
          "NCCL gave up connecting to a peer: every attempt timed out, so packets are dropped on the way "
          "(firewall or cloud security group) or the address is unreachable",
          FIX_PORTS + "; " + FIX_NIC),
    _rule("connect_timeout", "error", "timed out",
          r"client socket has failed to connect to (?P<peer>\S+) \(errno: 110",
          "torch could not reach the rendezvous store at {peer}: the connection timed out, so a firewall "
          "or security group drops the master port or MASTER_ADDR is not reachable from here",
          FIX_PORTS + "; " + FIX_RENDEZVOUS),
    _rule("connect_timeout", "error", "timed out",
          r"client socket has timed out after (?P<after>\S+?) while trying to connect to "
          r"(?P<peer>\([^)]*\)|\S+?)\.?\s*$",
          "torch could not reach the rendezvous store at {peer} within {after}: the master is not running, "
          "MASTER_ADDR is not its cluster address, or a firewall drops the master port",
          FIX_RENDEZVOUS),

    _rule("no_route", "error", "onnect to",
          r"[Cc]onnect to (?P<peer>\S+) (?:failed : |returned (?:\d+\()?)(?:No route to host|Network is unreachable)",
          "no route from this host to {peer}: NCCL advertised an address the peers cannot reach "
          "(the public NIC, a docker/veth bridge or an IPv6 link-local address)",
          FIX_NIC + "; check `ip route get <peer address>`"),
    _rule("connect_failed", "error", "onnect to",
          r"[Cc]onnect to (?P<peer>\S+) failed : (?!Connection refused|Connection timed out|No route to host|"
          r"Network is unreachable)(?P<error>.+)",
          "NCCL could not open a connection to {peer}: {error}",
          FIX_NIC + "; " + FIX_PORTS),
    # NCCL 2.19+'s proxy threads: "Proxy Call to rank 1 failed (Connect)", "[Service thread] Error
    # encountered progressing operation=Connect, res=3", "[Proxy Service 3] Failed to execute operation Connect".
    _rule("connect_failed", "error", ("Proxy Call to rank", "=Connect", "ation Connect"),
          r"Proxy Call to rank (?P<peer>\d+) failed \(Connect\)|progressing operation=Connect|"
          r"Failed to execute operation Connect",
          "NCCL's proxy could not connect to a peer's network endpoint (the connection between the hosts "
          "was refused, dropped or reset)",
          FIX_NIC + "; " + FIX_PORTS),
    _rule("retry_exceeded", "error", ("retry count", "Maximum retry"),
          r"^(?!.*(?:refused|timed out)).*(?:exceeded (?:error )?retry count|retry count exceeded|"
          r"Maximum retry reached for connect)",
          "NCCL gave up connecting to a peer after retrying: the peer does not listen on the address it "
          "advertised or the network drops the connection",
          FIX_PORTS + "; " + FIX_NIC),

    _rule("shm_too_small", "error", ("shared memory segment", "/dev/shm", "posix_fallocate"),
          r"(?:Error while (?:creating|attaching to) shared memory segment (?P<seg>\S+)(?: \(size (?P<size>\d+)\))?"
          r"|failed to extend (?P<seg2>/dev/shm/\S+)|Call to posix_fallocate failed : No space left on device)",
          "NCCL could not create its shared-memory segment {seg}{seg2} for the SHM transport between "
          "ranks of one host: /dev/shm is too small or full (Docker gives a container 64 MB)",
          "give the container more shared memory: `docker run --shm-size=16g` (or `--ipc=host`), on Kubernetes "
          "mount an emptyDir with medium: Memory at /dev/shm; remove stale /dev/shm/nccl-* files; "
          "NCCL_SHM_DISABLE=1 works around it at some speed"),
    _rule("shm_too_small", "error", "insufficient shared memory",
          r"insufficient shared memory \(shm\)",
          "a DataLoader worker died of a bus error: insufficient shared memory, /dev/shm is too small (Docker "
          "gives a container 64 MB)",
          "give the container more shared memory: `docker run --shm-size=16g` (or `--ipc=host`), or fewer "
          "DataLoader workers"),
    # The launcher could not start the program on a host: SSH, Open MPI's daemons, the executable or
    # a library it links. Nothing of NCCL ran there.
    _rule("launch_failed", "error", "(publickey",
          r"(?:(?:[\w.\-]+@)?(?P<subject_host>[\w.\-]+): )?Permission denied \(publickey",
          "SSH refused the key (Permission denied (publickey)){at}: the launcher (mpirun, pdsh, a hostfile "
          "launcher) could not start the program there",
          "give every host the controller's key in ~/.ssh/authorized_keys (nccl_profile's SSH trust sets it up "
          "between the cluster's hosts), and check `ssh HOST true` from the launching host"),
    _rule("launch_failed", "error", ("connect to host", "not resolve hostname"),
          r"ssh: (?:connect to host (?P<subject_host>\S+) port (?P<port>\d+): (?P<error>.+)|Could not resolve "
          r"hostname (?P<name>\S+?):? (?P<reason>.+))",
          "SSH could not reach a host of the job ({quoted}): the launcher could not start the program there",
          "check that the host name resolves on the launching host and that port 22 is open between the hosts "
          "(`ssh HOST true`); the hostfile must name the hosts by names or addresses they answer on"),
    # Ray's memory monitor killed a worker: the node's address and the worker's pid (its rank from Ray's table).
    _rule("oom_killed", "error", "where the task",
          r"Memory on the node \(IP: (?P<subject_host>[\w.\-:]+),.*?where the task \(.*?pid=(?P<subject_pid>\d+)",
          "Ray's memory monitor killed a training worker (pid {subject_pid}) on {subject_host}: the node ran low on "
          "host memory, and the other ranks' closed connections follow",
          "give the node more host memory or use less per worker (fewer DataLoader workers, no dataset held per "
          "rank, smaller object-store use); Ray's RAY_memory_usage_threshold sets when it kills",
          own=True),
    # Open MPI's report that a daemon went away names its node on the line after: that node's ranks died
    # with it (a reboot, a crash, its network), and the others' errors follow.
    _rule("rank_killed", "error", "] on node ",
          r"^\s*Remote daemon: \[\[\d+,\d+\],\d+\] on node (?P<subject_host>[\w.\-]+)",
          "mpirun lost its daemon on {subject_host} during the job (ORTE has lost communication with a remote "
          "daemon): that node went away (a reboot, a crash, a lost network) and took its ranks with it",
          "look at {subject_host}: `last -x reboot`, `journalctl --list-boots`, its BMC/cloud console and kernel log; "
          "take it out of the job until it is stable, then restart the job from a checkpoint",
          own=True),
    _rule("launch_failed", "error", ("unable to reliably start one or more daemons", "lost communication"),
          r"(?:ORTE|PRTE) (?:was unable to reliably start one or more daemons|has lost communication with a "
          r"remote daemon)",
          "Open MPI could not start (or lost) its daemon on a remote host: SSH to that host failed, or the "
          "remote host has no (or another) Open MPI in the non-interactive shell's PATH",
          "run `ssh HOST which orted prted` from the launching host: the same Open MPI must be found there; "
          "pass `--prefix /opt/openmpi` (or set PATH in ~/.bashrc before its interactive guard)"),
    # Slurm's container plugin (pyxis, enroot) could not unpack the job's image on a node: nothing started there.
    _rule("launch_failed", "error", "No space left on device",
          r"pyxis:\s+.*?(?P<reason>No space left on device)",
          "pyxis/enroot could not unpack the job's container image on this node ({reason}): its ranks never "
          "started, and the others waited for them at the rendezvous",
          "free the node's space where enroot unpacks images (ENROOT_DATA_PATH, ENROOT_CACHE_PATH, /tmp) or "
          "clean its old images (`enroot list`, `enroot remove`), then requeue the job"),
    # (PMIx's own "PMIX ERROR" lines alone prove nothing: some builds print them at every finalize.)
    _rule("launch_failed", "error", ("direct launched using", "PMI2_Init failed"),
          r"direct launched using \"?srun|PMI2_Init failed",
          "the MPI processes could not initialise under srun: Open MPI and Slurm do not agree on PMI (Open MPI "
          "built without Slurm's PMI/PMIx support, or srun's --mpi plugin not the one Open MPI uses), so no rank "
          "reached NCCL",
          "start with `srun --mpi=pmix` (or `--mpi=pmi2`, see `srun --mpi=list`) matching how Open MPI was built "
          "(`ompi_info | grep -i pmi`), or launch with mpirun inside the allocation; set MpiDefault in slurm.conf"),
    _rule("launch_failed", "error", "could not access",
          r"mpirun was unable to launch the specified application as it could not access",
          "mpirun could not find or execute the program on a host (the path differs or it was not built there)",
          "install the program at the same path on every host (the `Executable:` and `Node:` lines above name "
          "which)"),
    _rule("launch_failed", "error", "error while loading shared libraries",
          r"error while loading shared libraries: (?P<lib>\S+?): cannot open shared object file",
          "the program could not start: the library {lib} is not found by the dynamic loader",
          "install it on every host, or add its folder to LD_LIBRARY_PATH (or ld.so.conf) where the launcher "
          "starts the program; `ldd PROGRAM` shows what is missing"),
    _rule("efa_av_insert_failed", "error", "address vector",
          r"Unable to insert remote address into address vector",
          "EFA could not add a peer's address (\"Unable to insert remote address into address vector\"): the "
          "EFA security group does not admit traffic to itself, usually the outbound rule to the group itself "
          "is missing",
          "give the security group of every EFA interface a rule admitting all traffic inbound from itself AND "
          "one admitting all traffic outbound to itself (Destination: the group's own id); cloud_aws_mode: "
          "apply adds both"),
    _rule("efa_missing", "warning", "fi_getinfo",
          r"fi_getinfo(?:\(\))?.*(?:No data available|-61\b)",
          "libfabric found no EFA device (fi_getinfo: No data available): the EFA devices are not visible in "
          "this container or host",
          "map the EFA devices into the container (`docker run --device=/dev/infiniband/uverbs0 ...` for each, "
          "or the Kubernetes EFA device plugin's vpc.amazonaws.com/efa resource), and check `fi_info -p efa` "
          "inside it; on a host without EFA attach an EFA interface and install the EFA software",
          escalate="efa"),
    _rule("efa_missing", "error", "not found",
          r"Error: network (?P<net>[^.]*(?:Libfabric|OFI)[^.]*) not found",
          "NCCL_NET asks for the {net} network (aws-ofi-nccl), but its plugin found no usable EFA provider, so NCCL "
          "fails with invalid usage: the EFA devices are not visible here (not mapped into the container) or the "
          "EFA software is missing",
          "map the EFA devices into the container (`--device=/dev/infiniband/uverbs0 ...` for each, or the "
          "Kubernetes EFA device plugin's vpc.amazonaws.com/efa resource), check `fi_info -p efa` inside it; or "
          "unset NCCL_NET to let NCCL fall back to sockets"),
    _rule("ib_missing", "error", "not found",
          r"Error: network (?P<net>IB\S*) not found",
          "NCCL_NET={net} asks for InfiniBand, but NCCL found no usable IB device, so NCCL fails with invalid usage",
          "check `ibv_devinfo` (a port in state PORT_ACTIVE) and that the devices are visible in the container "
          "(--device=/dev/infiniband, --cap-add IPC_LOCK); or unset NCCL_NET"),
    _rule("ib_gid_error", "error", ("GidIndex", "RoceGetVersionNum", "ibv_query_gid", "GID", "gid index"),
          # "GID table change" (an async event): the address behind a GID moved, e.g. a NIC re-addressed.
          r"(?:ncclIbRoceGetVersionNum|ncclIbGetGidIndex|Call to ibv_query_gid failed|GID table change|"
          r"[Ii]nvalid (?:GID|gid)(?: index)?|[Gg][Ii][Dd] (?:index|table)\S* (?:\d+ )?(?:is )?(?:invalid|not found|"
          r"out of range|empty)|NCCL_IB_GID_INDEX.*(?:invalid|out of range))",
          "RoCE's GID table has no usable entry at the GID index NCCL uses ({quoted}): a wrong NCCL_IB_GID_INDEX, "
          "an IPv6 link-local or empty entry, or a container seeing another network namespace's GIDs",
          "pick the GID of the RoCE v2 entry with the cluster IPv4 address (`show_gids`, or `ibv_devinfo -v`) and "
          "set NCCL_IB_GID_INDEX to its index on every host (often 3); in containers give the pod the RDMA "
          "device's own network namespace"),
    _rule("ib_verbs_failed", "error", "Call to ibv_",
          r"Call to (?P<call>ibv_\w+) failed(?!.*\bretrying\b)",  # NCCL's retries that go on are not failures
          "the InfiniBand/RoCE verbs call {call} failed: the locked-memory limit is too low (containers), "
          "the HCA port is down, or the RoCE GID index is wrong",
          "raise the memlock limit (ulimit -l unlimited; docker --ulimit memlock=-1 --cap-add IPC_LOCK), "
          "check `ibstat`/`ibv_devinfo`, set NCCL_IB_GID_INDEX for RoCE, or NCCL_IB_DISABLE=1 to use sockets"),
    # The HCA's own event on the host whose link failed: ahead of the completion errors its peers then get.
    _rule("ib_completion_error", "error", "Got async",
          r"(?P<hca>\S+:\d+) Got async (?:error )?event: (?P<event>port error|local catastrophic error|"
          r"device fatal error|port flap\w*)",
          "the HCA port {hca} on this host reported '{event}': its link went down (cable, transceiver, switch "
          "port, HCA), so transfers through it fail and its peers' completions error out (status 12)",
          "check the port: `ibstat` / `ibv_devinfo` (state, physical state, link downs), `mlxlink -d DEVICE` "
          "or the switch port's counters, reseat or replace the cable or transceiver; take the host out until "
          "the link is stable"),
    _rule("ib_completion_error", "error", ("Got completion", "local access violation"),
          r"(?:NET/IB ?: Got completion (?:from peer (?P<peer>\S+) )?with (?:error |status=)(?P<status>\d+)"
          r"|(?P<lav>local access violation))",
          "an InfiniBand/RoCE transfer {with}failed ({completion}{lav}): 12 means the retries ran "
          "out (the NICs cannot reach each other over RDMA), 5/local access violation usually an MTU mismatch or "
          "a wrong RoCE GID; otherwise a link, switch port or the peer's HCA is down",
          "RoCE: set the same MTU on every NIC and switch port (`ibv_devinfo` active_mtu, `ip link`), and "
          "NCCL_IB_GID_INDEX to the RoCE v2 GID with the cluster address (`show_gids`, often 3); check "
          "`ibstat` link state on both hosts, NCCL_IB_HCA, and the switch's lossless (PFC) settings"),

    _rule("gloo_connect_failed", "error", "onnect [127.",
          r"connect \[(?P<peer>127\.[\d.]+\]:\d+)",
          "Gloo connected to the loopback address {peer}: this host's name resolves to 127.0.1.1 "
          "(/etc/hosts), so Gloo advertised loopback to the other ranks",
          "set GLOO_SOCKET_IFNAME to the cluster NIC (e.g. eth1), or make the hostname resolve to the "
          "cluster address in /etc/hosts"),
    # Gloo's own connect lines (torch 2.6+): "... remote=[127.0.1.1]:38657, error=SO_ERROR: Connection refused".
    _rule("gloo_connect_failed", "error", "remote=[127.",
          r"remote=\[(?P<peer>127\.[\d.]+)\]:\d+",
          "Gloo connected to the loopback address {peer}: a peer's host name resolves to 127.x (Debian's "
          "'127.0.1.1 hostname' line in /etc/hosts), so Gloo advertised loopback to the other ranks",
          "set GLOO_SOCKET_IFNAME to the cluster NIC (e.g. eth1), or make the hostname resolve to the "
          "cluster address in /etc/hosts on every host"),
    _rule("gloo_connect_failed", "error", "connectFullMesh failed",
          r"Gloo connectFullMesh failed with (?P<detail>.*)",
          "Gloo (torch.distributed's CPU backend, also used for barriers and object collectives) could "
          "not connect every rank: it uses the address the hostname resolves to, often the public NIC",
          FIX_NIC + "; make the hostname resolve to the cluster address; " + FIX_PORTS),
    _rule("gloo_connect_failed", "error", "]:",
          r"connect \[(?P<peer>[^\]]+\]:\d+): (?P<error>Connection refused|Connection timed out|No route to host)",
          "Gloo could not connect to {peer}: {error}",
          FIX_NIC + "; " + FIX_PORTS),
    _rule("gloo_connect_failed", "error", "enforce fail at",
          r"enforce fail at [^\]]*gloo[^\]]*\].*SO_ERROR: (?P<error>.+)",
          "Gloo could not connect to a peer: {error}",
          FIX_NIC + "; " + FIX_PORTS),

    _rule("address_in_use", "error", ("EADDRINUSE", "lready in use"),
          r"(?:port: (?P<port>\d+).*(?:EADDRINUSE|address already in use)|(?:EADDRINUSE|[Aa]ddress already in use)"
          r".*port:? (?P<port2>\d+)|bind to \S*:(?P<port3>\d+)\)? \(errno: 98)",
          "port {port}{port2}{port3} is taken (EADDRINUSE, address already in use), so the rendezvous store (TCPStore, MASTER_PORT) cannot listen: an "
          "earlier run still holds it, or two jobs use the same MASTER_PORT",
          "stop the leftover process (`ss -ltnp | grep :{port}{port2}{port3}`), or choose another MASTER_PORT for "
          "this job"),
    _rule("address_in_use", "error", "Bind to port",
          r"Bind to port (?P<port>\d+) on \S+ failed: Address already in use",
          "sshd cannot listen on port {port}, another process holds it (another job's sshd on the same node, "
          "with host networking): SSH to this host reaches that process or nothing, so a launcher's SSH fails here",
          "free port {port} on that node (pods with host networking and the same sshd port must not share a node: "
          "pod anti-affinity), or give this job's sshd another port"),
    _rule("address_in_use", "error", ("lready in use", "EADDRINUSE"),
          r"(?:Address already in use|EADDRINUSE|address already in use)",
          "a port this process needs is taken: an earlier run still holds it, or two jobs use the same "
          "MASTER_PORT",
          "stop leftover processes (`ss -ltnp | grep <port>`), or choose another MASTER_PORT"),

    _rule("rendezvous_timeout", "error", "RendezvousTimeoutError",
          r"RendezvousTimeoutError",
          "torchrun's rendezvous timed out: not every node joined (a node was not started, uses another "
          "--nnodes or --rdzv_id, or cannot reach the rendezvous endpoint)",
          FIX_RENDEZVOUS),
    _rule("rendezvous_timeout", "error", "clients joined",
          r"[Tt]imed out after (?P<after>\d+) seconds waiting for clients\. "
          r"(?P<joined>\d+)/(?P<total>\d+) clients joined",
          "only {joined} of {total} ranks ({joined}/{total} clients joined) reached the store within {after} s: "
          "the other nodes were not "
          "started or cannot reach MASTER_ADDR:MASTER_PORT",
          FIX_RENDEZVOUS),
    _rule("rendezvous_connection_error", "error", "ncclUniqueId",
          r"retrieving ncclUniqueId from \[(?P<src>\d+)\].*?got error: (?P<error>[^.]+)",
          "this rank could not get NCCL's unique id from rank {src} through torch's store ({error}): rank {src} "
          "failed before it published it, or the store (MASTER_ADDR:MASTER_PORT) became unreachable",
          "find why rank {src} stopped (its own log: an exception, OOM or signal comes first); if it runs, "
          + FIX_RENDEZVOUS),
    _rule("rendezvous_connection_error", "error", "any network address of",
          r"failed to connect to any network address of \((?P<name>[^,)]+), (?P<port>\d+)\)",
          "torch could not reach the rendezvous store at {name} port {port} on any of its addresses: the name "
          "does not resolve on this host (getaddrinfo), or no address of it answers",
          "set MASTER_ADDR (--master-addr, --rdzv_endpoint) to an address or a name every node resolves "
          "(`getent hosts NAME` on each node), on the cluster network; " + FIX_PORTS),
    _rule("rendezvous_connection_error", "error", "RendezvousConnectionError",
          r"RendezvousConnectionError",
          "torchrun could not connect to the C10d rendezvous store at --rdzv_endpoint",
          FIX_RENDEZVOUS),

    _rule("collective_desync", "error", "mismatch between collectives",
          r"Detected mismatch between collectives on ranks\.?\s*(?P<detail>.*)",
          "torch (TORCH_DISTRIBUTED_DEBUG=DETAIL) found the ranks in different collectives (a desync): {detail}",
          "the program, not the network: every rank must call the same collectives in the same order with "
          "tensors of the same shape; the message names each rank's collective, shape and sequence number"),
    # Names the late rank, not the one that reports it: the finding is that rank's (subject_rank).
    _rule("collective_desync", "error", "failed to pass monitoredBarrier",
          r"Ranks? (?P<subject_rank>\d+)(?P<more>(?:, ?\d+)*) failed to pass monitoredBarrier in (?P<ms>\d+) ?ms",
          "rank {subject_rank}{more} did not reach the collective the other ranks called within {ms} ms (torch's "
          "monitored barrier, TORCH_DISTRIBUTED_DEBUG=DETAIL): it took another code path (it skipped or added "
          "a collective: a desync), ended early, or is stuck before that collective",
          "look at rank {subject_rank}: its own log first (an exception, OOM or signal there is the cause); if "
          "it ran on or ended cleanly, the program lets the ranks disagree: every rank must call the same "
          "collectives in the same order (data-dependent branches, uneven batches, an early return on one rank)"),
    _rule("collective_desync", "error", "collective mismatch",
          r"collective mismatch error,? local size (?P<local>\d+),? remote size (?P<remote>\d+)",
          "NCCL reports a collective mismatch: this rank posted {local} bytes, its peer {remote} bytes: the ranks "
          "are in different collectives, or the same one with tensors of different sizes (a desync)",
          "the program, not the network: every rank must call the same collectives in the same order with "
          "tensors of the same size; look for rank- or data-dependent branches and shapes; "
          "TORCH_DISTRIBUTED_DEBUG=DETAIL checks every collective's shape"),
    _rule("collective_desync", "error", ("truncated", "Truncated"),
          r"[Mm]essage truncated\s*:?\s*(?:receiv(?:ed|ing) (?P<got>\d+) bytes? instead of (?P<want>\d+))?",
          "NCCL reports a message truncated: a rank received another size than it posted ({got} bytes instead "
          "of {want}): the ranks "
          "are in different collectives, or the same one with tensors of different sizes (a desync)",
          "the program, not the network: every rank must call the same collectives in the same order with "
          "tensors of the same size; look for rank- or data-dependent branches and shapes; "
          "TORCH_DISTRIBUTED_DEBUG=DETAIL checks every collective's shape"),
    # Gloo's receive checks the size its peer announced against the buffer this rank posted.
    _rule("collective_desync", "error", "preamble.length",
          r"op\.preamble\.length <= op\.nbytes\.? (?P<got>\d+) vs (?P<want>\d+)",
          "Gloo received {got} bytes where this rank posted a buffer of {want}: the ranks called a collective "
          "with tensors of different sizes, or different collectives (a desync); the rank that aborts is the "
          "one that received, and the others then see their connections close",
          "the program, not the network: every rank must call the same collectives in the same order with "
          "tensors of the same size; look for rank- or data-dependent shapes (the last batch, a branch on the "
          "rank); TORCH_DISTRIBUTED_DEBUG=DETAIL checks every collective's shape"),
    # Weak alone (NCCL returns it for other misuse too): a warning that the judge makes the root only
    # where nothing else explains the failure.
    _rule("collective_desync", "warning", ("ncclInvalidUsage", "invalid usage"),
          r"^(?!.*Test NCCL failure).*(?:ncclInvalidUsage|[Ii]nvalid usage)",
          "NCCL reports invalid usage (ncclInvalidUsage): the ranks called collectives that do not match "
          "(another operation, count, type or root on one rank: a desync), or passed an invalid argument",
          "the program, not the network: every rank must call the same collectives in the same order with "
          "the same sizes, types and root; rerun with NCCL_DEBUG=WARN to see NCCL's reason and "
          "TORCH_DISTRIBUTED_DEBUG=DETAIL to check every collective's shape"),
    _rule("collective_timeout", "error", "Watchdog caught collective operation timeout",
          r"Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(?P<seq>\d+), OpType=(?P<op>\w+)"
          r".*?ran for (?P<ms>\d+) milliseconds",
          "collective {op} (#{seq}) did not finish in {ms} ms: a rank is stuck or gone, or traffic between "
          "the hosts stalls (the hang after data loading: the wrong NIC or blocked ports)",
          FIX_NIC + "; " + FIX_PORTS + "; make sure every rank reaches the same collectives"),

    _rule("remote_exited", "error", "losed by remote peer",
          r"[Cc]onnection closed by remote peer (?P<peer>\S+)",
          "{peer} closed the connection: that process exited (its own log has the first error) or the "
          "network between the hosts dropped the connection",
          "find the rank that failed first and fix its error; if none failed, check the network between "
          "the hosts (MTU, firewall, NIC)"),
    # Gloo: "[.../gloo/transport/tcp/pair.cc:534] Connection closed by peer [10.0.0.12]:28817", and its
    # "Read error [10.0.0.12]:15045: Connection reset by peer".
    _rule("remote_exited", "error", ("losed by peer [", "reset by peer"),
          r"(?:[Cc]onnection closed by peer|Read error) \[(?P<peer>[^\]]+)\]:\d+",
          "the Gloo connection to {peer} closed: that process exited (its own log has the first error) or "
          "the network between the hosts dropped the connection",
          "find the rank that failed first and fix its error; if none failed, check the network between "
          "the hosts (MTU, firewall, NIC)"),
    _rule("remote_exited", "error", "failed : ",
          r"Call to (?:recv from|send to) (?P<peer>\S+) failed : (?P<error>.+)",
          "the connection to {peer} broke ({error}): that process exited or the network dropped it",
          "find the rank that failed first and fix its error; if none failed, check the network between "
          "the hosts (MTU, firewall, NIC)"),
    _rule("remote_exited", "error", ("remote process exited", "ncclRemoteError"),
          r"remote process exited or there was a network error|ncclRemoteError",
          "a remote rank exited or the network between the hosts failed (ncclRemoteError)",
          "find the rank that failed first and fix its error; if none failed, " + FIX_NIC),

    _rule("nccl_system_error", "error", ("ncclSystemError", "unhandled system error"),
          r"ncclSystemError|unhandled system error",
          "a system call failed inside NCCL (ncclSystemError): between hosts this is nearly always a "
          "socket to a peer, i.e. the wrong NIC or a blocked port",
          FIX_INTERNAL),
    _rule("nccl_internal_error", "error", ("ncclInternalError", "internal error"),
          r"ncclInternalError|internal error - please report|\binternal error, NCCL version",
          "ncclInternalError: on cloud hosts this is almost always the network, not NCCL: the wrong NIC "
          "(public side, docker/veth) or ports blocked between the hosts",
          FIX_INTERNAL),
    _rule("cuda_oom", "error", ("out of memory", "cudaErrorMemoryAllocation"),
          r"Cuda failure (?:\d+ )?'out of memory'|CUDA error: out of memory|cudaErrorMemoryAllocation",
          "CUDA out of memory inside NCCL (its buffers did not fit next to the model on that GPU): {quoted}",
          "free GPU memory for NCCL: lower the batch size per GPU, set PYTORCH_CUDA_ALLOC_CONF="
          "expandable_segments:True, lower NCCL_BUFFSIZE or NCCL_NCHANNELS_PER_NET_PEER, and check with "
          "`nvidia-smi` that no other process holds memory on that GPU"),
    # The Fabric Manager's own journal (`journalctl -u nvidia-fabricmanager`, `systemctl status`): without
    # it an NVSwitch host's GPUs cannot reach each other, and the job's first collective hangs on it.
    _rule("cuda_not_initialized", "error", "fabric manager NVIDIA GPU driver interface version",
          r"fabric manager NVIDIA GPU driver interface version (?P<fm>\S+) don't match with driver version "
          r"(?P<drv>\d[\d.]*\d)",
          "the NVIDIA Fabric Manager does not start on this host: its version {fm} does not match the driver's "
          "{drv}; " + CAUSE_FABRIC_MANAGER + ", and a collective across this host's GPUs hangs",
          "install the Fabric Manager package of the driver's exact version (or the driver of the Fabric "
          "Manager's), then `systemctl restart nvidia-fabricmanager`; hold both packages so that an unattended "
          "upgrade does not move one alone", own=True),
    _rule("cuda_not_initialized", "error", "Failed to start NVIDIA fabric manager",
          r"Failed to start NVIDIA fabric manager",
          "the NVIDIA Fabric Manager failed to start on this host: " + CAUSE_FABRIC_MANAGER + ", and a "
          "collective across this host's GPUs hangs", FIX_FABRIC_MANAGER, own=True),
    _rule("cuda_not_initialized", "error", "system not yet initialized",
          r"system not yet initialized", "CUDA reports 'system not yet initialized': " + CAUSE_FABRIC_MANAGER,
          FIX_FABRIC_MANAGER),
    _rule("cuda_error", "error", "Xid",
          r"NVRM: Xid \((?P<bus>[^)]*)\): (?P<xid>\d+)(?:, pid=(?P<xid_pid>\d+))?",
          "the GPU at {bus} reported Xid {xid}, a fault of the GPU or its driver (79: fallen off the bus; 48, 63, 64, "
          "94, 95: memory ECC errors; 74: NVLink; 13, 31, 43: an application's bad access): the ranks on it fail, "
          "the others follow",
          "look the Xid up in NVIDIA's Xid table; `nvidia-smi -q` for ECC and retired pages, reset or drain the GPU "
          "(79 and ECC errors are hardware: take the host out of the job), check power, cooling and the driver",
          own=True),
    # A fault of the GPU while it ran this rank's kernels: the rank's own failure, never a peer's doing (a
    # rank whose peer died sees remote and timeout errors, not these).
    _rule("cuda_error", "error", GPU_FAULT_WORDS,
          r"(?:\[Rank (?P<own_rank>\d+)\].*?)?(?P<error>an illegal memory access was encountered|unspecified launch "
          r"failure|uncorrectable ECC error encountered|misaligned address|an illegal instruction was encountered)",
          "the GPU faulted while running this rank's kernels ({error}): a kernel's bad memory access (often an "
          "index out of range that depends on the data) or the GPU itself failing (ECC, Xid in the kernel log); "
          "this rank failed first and the others follow",
          FIX_GPU_FAULT, own=True),
    # More specific lines of a CUDA call failing inside NCCL first: GPU peer access (P2P) and NVLink SHARP.
    _rule("cuda_error", "error", ("peer access is not supported", "peer mapping resources exhausted"),
          r"Cuda failure (?:\d+ )?'(?P<error>peer access is not supported[^']*|peer mapping resources exhausted)'",
          "NCCL could not map one GPU's memory into another ({error}): the GPUs have no peer-to-peer path "
          "(a VM or container without P2P, PCIe ACS or the IOMMU in the way) or too many peers are mapped",
          "NCCL_P2P_DISABLE=1 lets the job run through host memory (slower); for full speed give the VM or "
          "container P2P (GPU passthrough of the whole PCIe switch), disable PCIe ACS, or boot with iommu=pt; "
          "`nvidia-smi topo -p2p r` shows which pairs can"),
    _rule("cuda_error", "error", "nvls.cc",
          r"nvls\.cc:\d+ NCCL WARN Cuda failure (?:\d+ )?'(?P<error>[^']*)'",
          "a CUDA call NCCL makes to set up NVLink SHARP (NVLS) failed ({error}): the NVSwitch multicast it "
          "needs is missing or refused (the Fabric Manager, a driver without it, a VM or container without "
          "it, or an IMEX channel not granted)",
          "NCCL_NVLS_ENABLE=0 turns it off (NCCL uses the other algorithms); check `nvidia-smi -q | grep -i "
          "fabric` and that the Fabric Manager runs"),
    # NCCL 2.28+ fails where 2.27 went on without NVLS ("... Proceeding without NVLS support." at INFO).
    _rule("cuda_error", "error", "Failed to bind NVLink SHARP",
          r"NCCL WARN Failed to bind NVLink SHARP \(NVLS\) Multicast memory[^:]*: CUDA error (?P<code>\d+) "
          r"'(?P<error>[^']*)'(?!.*Proceeding without)",
          "NCCL could not bind NVLink SHARP (NVLS) multicast memory on this host (CUDA error {code}, {error}): the "
          "NVSwitch multicast it needs is in a bad state or refused (the Fabric Manager restarted or failed, a "
          "driver without it), and this NCCL stops instead of going on without NVLS",
          "NCCL_NVLS_ENABLE=0 lets the job run without NVLS; check `nvidia-smi -q | grep -i -A2 fabric` and the "
          "Fabric Manager's log on this host, and reset the GPUs (or reboot) after a Fabric Manager restart",
          own=True),
    _rule("cuda_error", "error", ("Cuda failure", "unhandled cuda error", "Test CUDA failure"),
          r"Cuda failure (?P<error>.+)|unhandled cuda error|Test CUDA failure",
          "a CUDA call failed inside NCCL: a driver/CUDA mismatch, a GPU fault (see Xid in dmesg), or a "
          "GPU this NCCL build was not compiled for",
          "check nvidia-smi and `dmesg | grep -i xid`, that the driver supports this CUDA version, and that "
          "the NCCL (or PyTorch) build supports this GPU architecture"),

    _rule("max_wrong", "error", "Out of bounds values",
          r"Out of bounds values\s*:\s*(?P<wrong>\d+) FAILED",
          "nccl-tests found {wrong} wrong values (its #wrong column): the collective completed but delivered "
          "corrupted data: GPUDirect RDMA through a PCIe switch with ACS on, a faulty NIC, GPU or cable, or an "
          "NCCL/driver bug",
          "rerun with NCCL_NET_GDR_LEVEL=LOC (no GPUDirect RDMA) and NCCL_P2P_DISABLE=1 to find the path at "
          "fault; check PCIe ACS (`lspci -vvv | grep ACSCtl`: SrcValid+ breaks GPUDirect), `nvidia-smi -q -d ECC` "
          "and the NIC's error counters; run nccl-tests per node pair to find the host"),
    # A graph or topology file for other hardware (a cloud image's /etc/nccl.conf after a VM resize): NCCL
    # then fails with a system or internal error, which this line explains.
    _rule("nccl_warning", "error", "XML Import",
          r"(?P<what>XML Import Channel\b.*)",
          "NCCL could not use the graph or topology file it was given ({what}): the file (NCCL_GRAPH_FILE, "
          "NCCL_TOPO_FILE) describes other hardware, such as another VM size or GPU count, and NCCL's init then "
          "fails with a system or internal error",
          "unset NCCL_GRAPH_FILE and NCCL_TOPO_FILE, or point them at this machine's files (cloud HPC images set "
          "them in /etc/nccl.conf for one VM size; after a resize they no longer match)",
          own=True),
    _rule("test_nccl_failure", "error", ("Test NCCL failure", "Test CUDA failure"),
          r"Test (?:NCCL|CUDA) failure (?P<location>\S+) '(?P<what>[^']*?)(?: / )?'",
          "nccl-tests stopped at {location}: {what}",
          FIX_LOOK_FIRST),
    _rule("child_failed", "error", "ChildFailedError",
          r"ChildFailedError",
          "torchrun stopped because a worker process failed; that worker's own error (above, or under "
          "'Root Cause') is the real cause",
          FIX_LOOK_FIRST),

    _rule("ib_missing", "info", "libibverbs",
          r"Failed to open libibverbs",
          "libibverbs is not installed, so NCCL cannot use InfiniBand/RoCE and uses sockets",
          "install rdma-core (libibverbs) if the hosts have InfiniBand or RoCE; otherwise nothing to do",
          escalate="ib"),
    _rule("ib_missing", "info", "No device found",
          r"NET/IB ?: No device found",
          "NCCL found no InfiniBand/RoCE device, so it uses sockets",
          "if the hosts should have InfiniBand: check `ibv_devinfo`, the drivers and the device's "
          "visibility in the container; otherwise nothing to do",
          escalate="ib"),
    _rule("ib_missing", "info", "Failed to initialize NET plugin IB",
          r"Failed to initialize NET plugin IB",
          "NCCL could not start its InfiniBand transport (no device or libibverbs, or NCCL_IB_DISABLE=1)",
          "if the hosts should have InfiniBand: check `ibv_devinfo` and NCCL_IB_DISABLE; otherwise nothing to do",
          escalate="ib"),
    _rule("ib_disabled", "info", "NCCL_IB_DISABLE set by environment to 1",
          r"NCCL_IB_DISABLE set by environment to 1\b",
          "InfiniBand is switched off by NCCL_IB_DISABLE=1 (right only where there is no InfiniBand)",
          "nothing to do without InfiniBand; with InfiniBand unset NCCL_IB_DISABLE",
          escalate="ib"),
    _rule("efa_missing", "info", "NET/OFI",
          r"NET/OFI (?:aws-ofi-nccl initialization failed|Could not find any optimal provider)",
          "the aws-ofi-nccl plugin found no usable libfabric provider, so NCCL cannot use EFA",
          "on AWS: attach EFA interfaces and install the EFA software and aws-ofi-nccl (cloud_aws does both checks)",
          escalate="efa"),
    _rule("efa_missing", "info", "provider efa output empty list",
          r"provider efa output empty list",
          "libfabric found no EFA device on this host",
          "on AWS: launch an EFA-capable instance type with an EFA interface and install the EFA driver",
          escalate="efa"),
)

# Root causes first, consequences last: the order findings of one severity are listed in.
PRIORITY = (
    "oom_killed", "cuda_oom", "rank_exception", "launch_failed",
    # libfabric finding no EFA device makes NCCL fall back to sockets, whose odd addresses follow.
    "efa_missing", "no_socket_interface", "nic_outside_cluster", "loopback_nic", "virtual_nic", "nccl_version_mismatch",
    "runtime_version_mismatch", "nccl_setting_mismatch",
    "socket_instead_of_ib", "socket_instead_of_efa", "duplicate_gpu", "shm_too_small", "efa_av_insert_failed",
    "ib_gid_error", "address_in_use", "collective_desync", "max_wrong",
    # A verbs call that failed is why the proxy's connect on that rank failed.
    "ib_verbs_failed", "connect_refused", "connect_timeout", "no_route", "connect_failed", "retry_exceeded",
    "ib_completion_error", "gloo_connect_failed", "rendezvous_connection_error",
    "rendezvous_timeout", "collective_timeout", "remote_exited", "nccl_system_error",
    "nccl_internal_error", "cuda_not_initialized", "cuda_error", "test_nccl_failure", "child_failed", "nccl_warning",
    "ib_missing", "ib_disabled", "incomplete_run", "completion_unknown",
)
_RANK = {code: index for index, code in enumerate(PRIORITY)}
# Most lines match no rule: a test for any needle spares them the loop over every rule. Substring
# tests in C are several times faster than one regex alternation of ~40 words over the line.
NEEDLES = _NEEDLES = tuple(sorted({n for rule in RULES for n in rule.needles}))


def anchors(needles, size: int = 4) -> tuple:
    """A few short substrings such that every needle contains one of them (a greedy cover).

    A line that holds none of them holds no needle: testing a dozen anchors (in C, through map) is
    several times cheaper than testing every needle, and nearly all lines hold none.
    """
    uncovered, chosen = set(needles), []
    while uncovered:
        counts: Dict[str, set] = {}
        for needle in uncovered:
            for start in range(max(len(needle) - size + 1, 1)):
                counts.setdefault(needle[start:start + size], set()).add(needle)
        best = max(sorted(counts), key=lambda piece: len(counts[piece]))
        chosen.append(best)
        uncovered -= counts[best]
    return tuple(chosen)


_ANCHORS = anchors(_NEEDLES)
# anchor -> the needles that hold it; needle -> indices of the rules that name it.
_ANCHOR_NEEDLES = {anchor: tuple(n for n in _NEEDLES if anchor in n) for anchor in _ANCHORS}
_NEEDLE_RULES: Dict[str, set] = {}
for _index, _each in enumerate(RULES):
    for _needle in _each.needles:
        _NEEDLE_RULES.setdefault(_needle, set()).add(_index)


_RULE_INDEX = {id(rule): index for index, rule in enumerate(RULES)}


def sort_key(finding: dict):
    # Within one code, the more specific rule (earlier in RULES) first, then the earlier line.
    return (SEVERITIES.index(finding["severity"]), _RANK.get(finding["code"], len(PRIORITY)),
            finding.get("_rule", len(RULES)), finding.get("line") or 0)


# Groups quoted at more length: torch's desync message names two collectives, each with its shape.
_GROUP_CHARS = {"detail": 900}


class _Blank(dict):
    def __missing__(self, key):
        return "?"


def match_line(text: str, expected_transport: str = "any") -> List[dict]:
    """Findings (without host) that one line's text supports; one per code at most."""
    found, seen = [], set()
    if not any(map(text.__contains__, _ANCHORS)):
        return found
    candidates = set()
    for anchor in _ANCHORS:
        if anchor in text:
            for needle in _ANCHOR_NEEDLES[anchor]:
                if needle in text:
                    candidates |= _NEEDLE_RULES[needle]
    for index in sorted(candidates):
        rule = RULES[index]
        if rule.code in seen:
            continue
        match = rule.pattern.search(text)
        if not match:
            continue
        seen.add(rule.code)
        # A group of the pattern that took no part is empty; a name the pattern lacks prints "?".
        values = _Blank({k: (v or "").strip()[:_GROUP_CHARS.get(k, 200)] for k, v in match.groupdict().items()})
        if values.get("peer"):
            values["peer"] = describe_peer(values["peer"])
        values["with"] = f"with {values['peer']} " if values.get("peer") else ""
        where = values.get("peer") or values.get("subject_host")
        values["at"] = f" at {where}" if where else ""
        values["quoted"] = match.group(0)[:200]
        # NCCL prints "with error 12" (older) or "with status=12": the cause quotes the form the log has.
        values["completion"] = ((("completion status={0}, status {0}" if "status=" in match.group(0)
                                  else "completion error {0}, status {0}").format(values["status"]))
                                if values.get("status") else "")
        severity = "error" if rule.escalate and rule.escalate == expected_transport else rule.severity
        found.append({"code": rule.code, "severity": severity, "cause": rule.cause.format_map(values),
                      "fix": rule.fix.format_map(values), "_rule": _RULE_INDEX[id(rule)], "_own": rule.own})
        if values.get("subject_rank", "").isdigit():  # the line names the rank the finding is about
            found[-1].update(rank=int(values["subject_rank"]), _subject=True)
        elif values.get("own_rank", "").isdigit():  # the rank that printed it names itself ("[Rank 3] ...")
            found[-1]["_rank"] = int(values["own_rank"])
        if values.get("va"):  # NCCL's version check: diagnosis.log names the odd host from every such line
            found[-1]["_versions"] = True
        if values.get("subject_host"):  # the line names the host the finding is about (SSH refused it)
            found[-1]["_subject_host"] = values["subject_host"]
        if values.get("subject_pid"):  # the process the line is about: diagnosis.log gives its rank
            found[-1]["_subject_pid"] = values["subject_pid"]
        if match.groupdict().get("peer"):  # as the line wrote it: diagnosis.log asks whether that name resolved
            found[-1]["_peer"] = match.group("peer")
        if values.get("bus"):  # a GPU's PCI address (an Xid): diagnosis.log finds the rank on it
            found[-1].update(_bus=values["bus"], _xid_pid=values.get("xid_pid") or None)
    return found


def nccl_warning(message: str) -> dict:
    return {"code": "nccl_warning", "severity": "warning",
            "cause": f"NCCL warned: {message.strip()[:300]}",
            "fix": "look the message up in the NCCL troubleshooting guide; it often points at a variable "
                   "to set (NCCL_SOCKET_IFNAME, NCCL_IB_HCA, NCCL_P2P_LEVEL)"}


def describe_peer(token: str) -> str:
    """"10.0.0.2<45763>", "[127.0.1.1]:3210", "(IP1, 2222)" or "10.0.0.2:80." -> "10.0.0.2 port 45763"."""
    token = token.strip().rstrip(".,;")
    patterns = (r"^(?P<a>.+)<(?P<p>\d+)>$", r"^\[?(?P<a>[^\[\]]+?)\]?:(?P<p>\d+)\]?$",
                r"^\((?P<a>[^,]+),\s*(?P<p>\d+)\)$")
    for pattern in patterns:
        match = re.match(pattern, token)
        if match:
            return f"{match.group('a')} port {match.group('p')}"
    return token


# ---- findings about the whole log ----

def parse_networks(cluster_cidr=None, cluster_ips=None):
    """The cluster networks from a CIDR (or a list of them) and a list of host addresses."""
    networks = []
    for value in _as_list(cluster_cidr) + _as_list(cluster_ips):
        try:
            networks.append(ipaddress.ip_network(str(value).strip(), strict=False))
        except ValueError:
            raise ValueError(f"{value!r} is not an IP address or network (cluster_cidr, cluster_ips)")
    return networks


def _as_list(value) -> list:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [part for part in value.replace(",", " ").split() if part]
    return list(value)


# Docker's default bridge: a container on it (not --network host) shows an "eth0" with such an address.
DOCKER_BRIDGE = ipaddress.ip_network("172.17.0.0/16")


def majority_network(addresses: Dict[str, str]):
    """The /24 (IPv4) that holds the bootstrap addresses of at least two thirds of three or more hosts,
    when some host is outside it: the cluster network the logs show, for a host that picked another NIC.
    None when there is no such majority or no host outside it."""
    nets: Dict[object, List[str]] = {}
    for host, text in addresses.items():
        address = parse_address(text)
        if address is not None and address.version == 4 and not address.is_loopback:
            nets.setdefault(ipaddress.ip_network(f"{address}/24", strict=False), []).append(host)
    if len(addresses) < 3 or not nets:
        return None
    best = max(nets, key=lambda net: len(nets[net]))
    held = len(nets[best])
    return best if 3 * held >= 2 * len(addresses) and held < len(addresses) else None


def nic_findings(host: str, facts: dict, networks, multi_node: bool, physical=(), inferred=None) -> List[dict]:
    """NICs outside the cluster networks; without networks, loopback or virtual NICs on a multi-node run,
    and NICs outside the network the other hosts share (inferred: majority_network's).

    physical: names of NICs the log shows that are neither loopback nor virtual, for the fix.
    """
    found = []
    fix_nic = FIX_NIC
    if physical:
        names = ", ".join(physical[:3])
        fix_nic = (f"set NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME to the physical NIC on the cluster network "
                   f"(the log shows {names}), e.g. NCCL_SOCKET_IFNAME={physical[0]} GLOO_SOCKET_IFNAME={physical[0]}, "
                   "or exclude the virtual ones (NCCL_SOCKET_IFNAME=^docker,br-,veth,virbr,lo)")
    for nic, roles in _addressed_nics(facts):
        address = parse_address(nic["address"])
        uses = f"NCCL uses {nic['name']} {nic['address']} for {' and '.join(roles)}"
        if networks:
            if address is None or not any(address in net for net in networks if net.version == address.version):
                nets = ", ".join(str(net) for net in networks)
                found.append(_derived("nic_outside_cluster", "error", host, nic["origin"],
                                      f"{uses}, outside the cluster network {nets}: it picked the wrong NIC "
                                      "(often the public side)",
                                      FIX_NIC.replace("the cluster (private) network",
                                                      f"the cluster network ({nets})")))
        elif multi_node and address is not None and address.is_loopback:
            found.append(_derived("loopback_nic", "warning", host, nic["origin"],
                                  f"{uses} on a multi-node run: loopback cannot reach other hosts (this works "
                                  "only when all ranks share one network namespace)", FIX_NIC))
        elif multi_node and (is_virtual(nic["name"]) or (address is not None and address.is_link_local)
                             or (address is not None and address in DOCKER_BRIDGE)):
            bridge = (f" ({nic['address']} is in Docker's default bridge network {DOCKER_BRIDGE}: a container "
                      "without --network host)" if address is not None and address in DOCKER_BRIDGE else "")
            found.append(_derived("virtual_nic", "warning", host, nic["origin"],
                                  f"{uses} on a multi-node run: a container/virtual or link-local address that "
                                  f"other hosts usually cannot reach{bridge}", fix_nic if physical else
                                  FIX_NIC + "; or exclude the virtual ones (NCCL_SOCKET_IFNAME=^docker,br-,veth,"
                                  "virbr,lo)" + ("; run the container with --network host" if bridge else "")))
        elif multi_node and inferred is not None and "bootstrap" in roles and address is not None \
                and address.version == 4 and address not in inferred and not address.is_loopback:
            found.append(_derived("nic_outside_cluster", "warning", host, nic["origin"],
                                  f"{uses}, while the other hosts bootstrap on {inferred}: it picked another NIC "
                                  "than they did (often the public side), which they may not reach",
                                  FIX_NIC.replace("the cluster (private) network", f"the cluster network ({inferred})")))
    return found


def is_virtual(name: str) -> bool:
    return any(fnmatch.fnmatch(name, pattern) for pattern in VIRTUAL_NIC_PATTERNS)


def _addressed_nics(facts: dict):
    """[(nic, roles)]: each NIC with an address once, with what NCCL uses it for."""
    nics: Dict[tuple, tuple] = {}
    listed = [(nic, "bootstrap") for nic in _values(facts["bootstrap_nics"])]
    listed += [(nic, "NET/Socket traffic" if nic["kind"] == "Socket" else "IB out-of-band traffic")
               for nic in _values(facts["net_nics"]) if nic.get("address")]
    for nic, role in listed:
        key = (nic["name"], nic["address"])
        roles = nics.setdefault(key, (nic, []))[1]
        if role not in roles:
            roles.append(role)
    return list(nics.values())


def _values(nics):
    return nics.values() if isinstance(nics, dict) else nics


def version_findings(versions_by_host: Dict[str, List[tuple]]) -> List[dict]:
    """One finding per host whose NCCL version differs from the one most hosts use.

    versions_by_host: {host: [(version, origin)]}, origin being {evidence, source, line}.
    """
    bases = {}
    for host, versions in versions_by_host.items():
        for version, dummy in versions:
            bases.setdefault(_base(version), set()).add(host)
    if len(bases) < 2:
        return []
    reference = max(bases, key=lambda base: (len(bases[base]), _numeric(base)))
    found = []
    for host, versions in versions_by_host.items():
        for version, origin in versions:
            if _base(version) != reference:
                others = _some_hosts(bases[reference])
                found.append(_derived("nccl_version_mismatch", "error", host, origin,
                                      f"NCCL {version} here, {reference} on {others}: every rank must run "
                                      "the same NCCL version, or init hangs or fails",
                                      "install the same NCCL (and PyTorch build) on every host, e.g. from "
                                      "one image; check with `python -c 'import torch; print(torch.cuda.nccl."
                                      "version())'`"))
                break
    return found


def _some_hosts(hosts, shown: int = 3) -> str:
    # Each mismatching host gets its own finding: naming every other host in each would make the
    # result quadratic in the number of hosts.
    names = sorted(hosts)
    if len(names) <= shown:
        return ", ".join(names)
    return f"{len(names)} hosts ({', '.join(names[:shown])}, ...)"


def _base(version: str) -> str:
    return version.split("+", 1)[0]


def _numeric(base: str):
    return tuple(int(part) for part in re.findall(r"\d+", base))


def transport_findings(host: str, transports: Iterable[tuple], expected: str) -> List[dict]:
    """Sockets (or a non-EFA libfabric provider) used where IB or EFA was expected.

    transports: [(transport, origin)] in log order.
    """
    # Libfabric with no provider line for that host (a cut log) proves no fall-back: only Socket or
    # a named provider other than efa does.
    wanted = {"ib": ("IB",), "efa": ("OFI(EFA)", "OFI")}.get(expected)
    if not wanted:
        return []
    for transport, origin in transports:
        if transport not in wanted:
            if expected == "ib":
                return [_derived("socket_instead_of_ib", "error", host, origin,
                                 f"NCCL uses {transport} although InfiniBand was expected: NCCL_IB_DISABLE=1 "
                                 "is set, libibverbs is missing, or no IB port is active",
                                 "unset NCCL_IB_DISABLE, install rdma-core, check `ibv_devinfo` (port "
                                 "PORT_ACTIVE) and NCCL_IB_HCA")]
            return [_derived("socket_instead_of_efa", "error", host, origin,
                             f"NCCL uses {transport} although EFA was expected: the aws-ofi-nccl plugin is "
                             "missing or did not select the efa provider",
                             "install the EFA software and aws-ofi-nccl and point NCCL at the plugin "
                             "(NCCL_NET_PLUGIN=/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so with NCCL 2.21 or "
                             "later; NCCL 2.20 and older never open a path, whatever LD_LIBRARY_PATH says: "
                             "there NCCL_NET_PLUGIN=ofi with the plugin's folder in ld.so.conf or "
                             "LD_LIBRARY_PATH), and give the security "
                             "group of every EFA interface all traffic inbound from itself and outbound to "
                             "itself (cloud_aws_mode: apply adds both)")]
    return []


def _derived(code, severity, host, origin, cause, fix):
    return dict(origin, code=code, severity=severity, host=host, cause=cause, fix=fix)
