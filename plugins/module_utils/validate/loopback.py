# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""nccl_validate's node-local NET test: two ranks on one host that NCCL takes for two nodes.

NCCL hashes NCCL_HOSTID, when set, instead of the host name to tell hosts apart; two ranks with
different values are "on different nodes", so NCCL joins them through its network transport
(NET/Socket, or IB/eRDMA/EFA where the profile enables it) and never through P2P or SHM. No
namespace is needed (unshare needs CAP_SYS_ADMIN, which containers seldom grant).

nccl-tests picks each rank's GPU from its own count of ranks per host name, which does not see
NCCL_HOSTID: NCCL_TESTS_DEVICE (nccl-tests 2.18 and later) pins it instead. Open MPI's
app contexts (`A : B`) give each rank its own variables; `env NAME=VALUE PROGRAM` sets them
without a shell. Pure Python 3.8+ standard library.
"""

from __future__ import annotations

RANKS = 2
HOSTID_PREFIX = "ncclkit-net-loopback-"

# Set on both ranks. P2P and SHM are only used between ranks of one host hash, so these change
# nothing NCCL would pick; they keep the test on the network even for an NCCL that looked at the
# real host. NVLS (multicast) is node-local and never wanted here.
RUN_ENV = {"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1", "NCCL_NVLS_ENABLE": "0"}

# Open MPI starts every rank on this host (no hostfile), lets root run it, and does not pin two
# ranks to the cores of one slot.
MPIRUN_OPTIONS = ["--allow-run-as-root", "--oversubscribe", "--bind-to", "none"]


def mpirun_path(mpi):
    """The mpirun beside the mpicc nccl_preflight found (fact ncclkit_mpi: Open MPI installs both in
    one bin folder; its `home` may be a Debian library folder without bin/), else the one on PATH."""
    mpicc = str((mpi or {}).get("mpicc") or "")
    if mpicc.startswith("/") and "/" in mpicc.rstrip("/"):
        return mpicc.rstrip("/").rsplit("/", 1)[0] + "/mpirun"
    return "mpirun"


def rank_prefixes(gpus, ranks=RANKS):
    """Per rank: `env NCCL_HOSTID=... NCCL_TESTS_DEVICE=...`, one GPU each where the host has enough,
    else all on GPU 0 (ranks then share it, as two processes may)."""
    gpus = int(gpus)
    if gpus < 1:
        raise ValueError("the NET loopback test needs a GPU on the host (found {0})".format(gpus))
    return [["env", "NCCL_HOSTID={0}{1}".format(HOSTID_PREFIX, rank),
             "NCCL_TESTS_DEVICE={0}".format(rank if gpus >= ranks else 0)] for rank in range(ranks)]


def plan(mpi, gpus, env_names, ifname=""):
    """The launcher, the per-rank prefixes and the environment the test adds.

    `env_names`: the variables of the run's environment, forwarded to both ranks with -x;
    `ifname`: the host's cluster NIC, for NCCL_SOCKET_IFNAME where the profile sets none (the
    ranks then talk over that address; it never leaves the host)."""
    names = sorted(set(env_names or ()) | set(RUN_ENV))
    launcher = [mpirun_path(mpi)] + MPIRUN_OPTIONS
    for name in names:
        launcher += ["-x", name]
    env = dict(RUN_ENV)
    if "NCCL_SOCKET_IFNAME" not in (env_names or ()):
        env["NCCL_SOCKET_IFNAME"] = ifname or "lo"
        launcher += ["-x", "NCCL_SOCKET_IFNAME"]
    return {"launcher": launcher, "rank_prefixes": rank_prefixes(gpus), "env": env, "ranks": RANKS}


def mpmd_argv(argv, launcher_len, prefixes):
    """`launcher PREFIX0 PROGRAM : PREFIX1 PROGRAM ...` from `launcher PROGRAM`; `argv` unchanged
    without prefixes (one app context for all ranks)."""
    argv = list(argv)
    if not prefixes:
        return argv
    launcher_len = int(launcher_len)
    if not 0 < launcher_len < len(argv):
        raise ValueError("the launcher takes {0} of the command's {1} words: nothing left to start".format(
            launcher_len, len(argv)))
    launcher, program = argv[:launcher_len], argv[launcher_len:]
    out = list(launcher)
    for index, prefix in enumerate(prefixes):
        if index:
            out.append(":")
        out += ["-np", "1"] + list(prefix) + program
    return out
