"""nccl_validate's node-local NET test (module_utils/validate/loopback.py and its filters): the
launcher, the per-rank host ids and GPUs, the environment, and the MPMD command line."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.ncclkit.cluster.plugins.filter.validate import FilterModule
from ansible_collections.ncclkit.cluster.plugins.filter.validate import (
    FilterModule as ArgvFilter,
)
from ansible_collections.ncclkit.cluster.plugins.module_utils.validate import loopback as nccl_net_loopback

FILTERS = FilterModule().filters()
plan = FILTERS["nccl_net_loopback_plan"]
mpmd_argv = FILTERS["nccl_mpmd_argv"]
validate_argv = ArgvFilter().filters()["nccl_validate_argv"]

# ncclkit_mpi as nccl_preflight found it on the H200 (tests/samples/h200-toolchain.json): Debian's
# layout, whose home has no bin/ (mpirun is /usr/bin/mpirun, beside mpicc).
MPI = {"found": True, "flavor": "openmpi", "home": "/usr/lib/x86_64-linux-gnu/openmpi", "mpicc": "/usr/bin/mpicc"}
BIN = "/opt/ncclkit/nccl-tests/current/bin/all_reduce_perf"
SIZES = {"min_bytes": "8", "max_bytes": "1G", "step_factor": 2, "iters": 20, "warmup_iters": 5, "check": 1}


def test_one_gpu_host_runs_both_ranks_on_gpu_0_with_distinct_host_ids():
    result = plan(MPI, 1, ["NCCL_DEBUG", "NCCL_SOCKET_IFNAME", "NCCL_IB_DISABLE"], "eth0")
    assert result["launcher"][:5] == ["/usr/bin/mpirun", "--allow-run-as-root",
                                      "--oversubscribe", "--bind-to", "none"]
    assert result["rank_prefixes"] == [
        ["env", "NCCL_HOSTID=ncclkit-net-loopback-0", "NCCL_TESTS_DEVICE=0"],
        ["env", "NCCL_HOSTID=ncclkit-net-loopback-1", "NCCL_TESTS_DEVICE=0"],
    ]
    assert result["ranks"] == 2
    # The profile's NIC stays: the test adds only what keeps NCCL off P2P, SHM and NVLS.
    assert result["env"] == {"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1", "NCCL_NVLS_ENABLE": "0"}


def test_every_variable_of_the_run_reaches_both_ranks():
    launcher = plan(MPI, 1, ["NCCL_IB_DISABLE", "NCCL_DEBUG"], "")["launcher"]
    forwarded = [launcher[i + 1] for i, word in enumerate(launcher) if word == "-x"]
    assert forwarded == ["NCCL_DEBUG", "NCCL_IB_DISABLE", "NCCL_NVLS_ENABLE", "NCCL_P2P_DISABLE",
                         "NCCL_SHM_DISABLE", "NCCL_SOCKET_IFNAME"]


@pytest.mark.parametrize(("ifname", "expected"), [("eth1", "eth1"), ("", "lo")])
def test_socket_nic_comes_from_the_cluster_nic_where_the_run_sets_none(ifname, expected):
    assert plan(MPI, 1, ["NCCL_DEBUG"], ifname)["env"]["NCCL_SOCKET_IFNAME"] == expected


def test_two_gpus_or_more_give_each_rank_its_own():
    prefixes = plan(MPI, 8, [], "lo")["rank_prefixes"]
    assert [prefix[2] for prefix in prefixes] == ["NCCL_TESTS_DEVICE=0", "NCCL_TESTS_DEVICE=1"]


def test_mpirun_from_path_without_an_mpicc():
    assert plan({"found": False, "home": "", "mpicc": ""}, 1, [], "lo")["launcher"][0] == "mpirun"
    assert plan({"mpicc": "mpicc"}, 1, [], "lo")["launcher"][0] == "mpirun"
    assert plan({"mpicc": "/opt/openmpi/bin/mpicc"}, 1, [], "lo")["launcher"][0] == "/opt/openmpi/bin/mpirun"
    assert plan(None, 1, [], "lo")["launcher"][0] == "mpirun"


def test_a_host_without_gpu_is_refused_with_the_cause():
    with pytest.raises(AnsibleFilterError, match="needs a GPU on the host"):
        plan(MPI, 0, [], "lo")


def test_mpmd_argv_repeats_the_benchmark_in_one_app_context_per_rank():
    result = plan(MPI, 1, ["NCCL_DEBUG"], "lo")
    launcher = result["launcher"]
    whole = validate_argv(launcher, BIN, SIZES, 1, "/tmp/x/net_loopback.json", True)
    argv = mpmd_argv(whole, len(launcher), result["rank_prefixes"])
    program = whole[len(launcher):]
    assert argv[:len(launcher)] == launcher
    rest = argv[len(launcher):]
    split = rest.index(":")
    assert rest[:split] == ["-np", "1"] + result["rank_prefixes"][0] + program
    assert rest[split + 1:] == ["-np", "1"] + result["rank_prefixes"][1] + program
    assert program[0] == BIN and program[-2:] == ["-J", "/tmp/x/net_loopback.json"]


def test_mpmd_argv_leaves_other_runs_alone():
    argv = ["/opt/ncclkit/bin/ncclkit-mpirun", "-x", "NCCL_DEBUG", BIN, "-g", "1"]
    assert mpmd_argv(argv, 3, []) == argv
    assert mpmd_argv([BIN, "-g", "8"], 0, []) == [BIN, "-g", "8"]


@pytest.mark.parametrize("launcher_len", [0, 3])
def test_mpmd_argv_refuses_a_command_without_launcher_or_program(launcher_len):
    with pytest.raises(AnsibleFilterError, match="nothing left to start"):
        mpmd_argv(["mpirun", "-x", "A"], launcher_len, [["env", "A=1"]])


def test_host_ids_differ_and_are_one_word_each():
    ids = [prefix[1] for prefix in nccl_net_loopback.rank_prefixes(1)]
    assert len(set(ids)) == 2 and all(" " not in word for word in ids)
