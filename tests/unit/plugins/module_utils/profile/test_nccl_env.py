"""module_utils.nccl_env: the environment one host gets, and every bad value refused with its cause."""

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.profile.env import (
    TUNING_NAMES,
    NcclEnvError,
    env_problems,
    profile_env,
)

BASE = {"ifname": "eth1", "cluster_networks": ["198.19.0.0/24"], "debug": "WARN",
        "torch_async_error_handling": 1}


def settings(**changes):
    return {**BASE, **changes}


def test_the_default_profile_pins_every_library_to_the_cluster_nic():
    assert profile_env(BASE) == {
        "GLOO_SOCKET_IFNAME": "eth1",
        "NCCL_DEBUG": "WARN",
        "NCCL_IB_DISABLE": "1",
        "NCCL_SOCKET_IFNAME": "=eth1",
        "OMPI_MCA_btl_tcp_if_include": "198.19.0.0/24",
        "OMPI_MCA_oob_tcp_if_include": "198.19.0.0/24",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
        "TP_SOCKET_IFNAME": "eth1",
    }


def test_no_tuning_variable_unless_asked():
    env = profile_env(settings(rdma_usable=True, nccl_net="IB", debug_subsys="INIT,NET",
                               debug_file="/tmp/nccl.%h.%p.log", torch_blocking_wait=True,
                               torch_heartbeat_timeout_sec=600))
    assert not set(TUNING_NAMES) & set(env)
    assert env["NCCL_IB_DISABLE"] == "0" and env["NCCL_NET"] == "IB"
    assert env["NCCL_DEBUG_SUBSYS"] == "INIT,NET" and env["NCCL_DEBUG_FILE"] == "/tmp/nccl.%h.%p.log"
    assert env["TORCH_NCCL_BLOCKING_WAIT"] == "1" and env["TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC"] == "600"


def test_required_rdma_forbids_the_socket_fallback_unless_a_plugin_is_named():
    assert profile_env(settings(rdma_usable=True, rdma_required=True))["NCCL_NET"] == "IB"
    env = profile_env(settings(rdma_usable=True, rdma_required=True, nccl_net="AWS Libfabric"))
    assert env["NCCL_NET"] == "AWS Libfabric"


def test_empty_settings_leave_their_variables_out():
    env = profile_env(settings(debug="", torch_async_error_handling=""))
    assert "NCCL_DEBUG" not in env and "TORCH_NCCL_ASYNC_ERROR_HANDLING" not in env
    assert "NCCL_NET" not in env and "TORCH_NCCL_BLOCKING_WAIT" not in env


def test_layers_win_in_order_cloud_measured_user_extra():
    env = profile_env(settings(
        cloud_env={"NCCL_NET": "Socket", "FI_PROVIDER": "efa", "NCCL_ALGO": "Tree"},
        measured_tuning={"NCCL_ALGO": "Ring", "NCCL_BUFFSIZE": 8388608},
        tuning={"NCCL_ALGO": "ring,tree", "NCCL_PROTO": "^LL128"},
        extra_env={"NCCL_PROTO": "Simple", "NCCL_P2P_DISABLE": True}))
    assert env["FI_PROVIDER"] == "efa" and env["NCCL_NET"] == "Socket"
    assert env["NCCL_ALGO"] == "ring,tree" and env["NCCL_BUFFSIZE"] == "8388608"
    assert env["NCCL_PROTO"] == "Simple" and env["NCCL_P2P_DISABLE"] == "1"


def test_several_cluster_networks_all_reach_open_mpi():
    env = profile_env(settings(cluster_networks=["10.0.1.0/24", "10.0.2.7/24", "10.0.1.0/24"]))
    assert env["OMPI_MCA_btl_tcp_if_include"] == "10.0.1.0/24,10.0.2.0/24"


@pytest.mark.parametrize("tuning", [
    {"NCCL_ALGO": "Ring"}, {"NCCL_ALGO": "tree,ring,collnetdirect,collnetchain,nvls,nvlstree,pat"},
    {"NCCL_ALGO": "^NVLS"}, {"NCCL_ALGO": "ring;allreduce:tree,ring;broadcast:ring"},
    {"NCCL_PROTO": "LL,LL128,Simple"}, {"NCCL_PROTO": "^LL128;allreduce:LL128"},
    {"NCCL_SOCKET_NTHREADS": 16, "NCCL_NSOCKS_PERTHREAD": 4},
    {"NCCL_SOCKET_NTHREADS": 1}, {"NCCL_NSOCKS_PERTHREAD": 64}, {"NCCL_BUFFSIZE": "4194304"},
])
def test_valid_tuning_is_written_as_given(tuning):
    env = profile_env(settings(tuning=tuning))
    assert {name: env[name] for name in tuning} == {name: str(value) for name, value in tuning.items()}


@pytest.mark.parametrize("tuning, message", [
    ({"NCCL_SOCKET_NTHREADS": 0}, "NCCL_SOCKET_NTHREADS (from nccl_profile_tuning) is '0': NCCL and "
                                  "PyTorch take a whole number 1-16"),
    ({"NCCL_SOCKET_NTHREADS": 17}, "whole number 1-16"),
    ({"NCCL_SOCKET_NTHREADS": "two"}, "whole number 1-16"),
    ({"NCCL_SOCKET_NTHREADS": 16, "NCCL_NSOCKS_PERTHREAD": 5},
     "NCCL_SOCKET_NTHREADS (16, from nccl_profile_tuning) x NCCL_NSOCKS_PERTHREAD (5, from "
     "nccl_profile_tuning) is 80; NCCL allows at most 64 sockets per connection"),
    ({"NCCL_NSOCKS_PERTHREAD": 65}, "whole number 1-64"),
    ({"NCCL_ALGO": "Ringg"}, "NCCL_ALGO (from nccl_profile_tuning) is 'Ringg': 'Ringg' is not an "
                             "algorithm; NCCL 2.28 knows Tree, Ring, CollNetDirect, CollNetChain, NVLS, "
                             "NVLSTree, PAT"),
    ({"NCCL_ALGO": "ring;tree"}, "every entry after the first needs a collective prefix"),
    ({"NCCL_ALGO": "allgathr:ring"}, "'allgathr' is not a collective"),
    ({"NCCL_ALGO": ""}, "an empty list is not an algorithm"),
    ({"NCCL_PROTO": "LL256"}, "'LL256' is not a protocol; NCCL 2.28 knows LL, LL128, Simple"),
    ({"NCCL_BUFFSIZE": -1}, "whole number 1 or more (bytes)"),
    ({"NCCL_SOCKET_IFNAME": "eth1"}, "nccl_profile_tuning.NCCL_SOCKET_IFNAME is not a tuning variable"),
])
def test_bad_tuning_is_refused_naming_the_variable(tuning, message):
    problems = env_problems(settings(tuning=tuning))
    assert any(message in problem for problem in problems), problems
    with pytest.raises(NcclEnvError, match="nccl_profile_tuning"):
        profile_env(settings(tuning=tuning))


def test_the_product_uses_the_threads_of_another_layer():
    problems = env_problems(settings(measured_tuning={"NCCL_SOCKET_NTHREADS": 8},
                                     tuning={"NCCL_NSOCKS_PERTHREAD": 16}))
    assert problems == ["NCCL_SOCKET_NTHREADS (8, from ncclkit_nccl_tuning) x NCCL_NSOCKS_PERTHREAD "
                        "(16, from nccl_profile_tuning) is 128; NCCL allows at most 64 sockets per connection"]


@pytest.mark.parametrize("changes, message", [
    ({"debug": "LOUD"}, "NCCL_DEBUG (from nccl_profile_debug) is 'LOUD': valid values are VERSION, "
                        "WARN, INFO, ABORT, TRACE"),
    ({"debug_subsys": "INIT,NETWORK"}, "'NETWORK' is not a subsystem"),
    ({"debug_file": "nccl.log"}, "NCCL_DEBUG_FILE (from nccl_profile_debug_file) is 'nccl.log': give an "
                                 "absolute path"),
    ({"debug": "", "debug_file": "/tmp/nccl.log"}, "NCCL_DEBUG_FILE (from nccl_profile_debug_file) is "
     "written only when NCCL_DEBUG is WARN"),
    ({"torch_async_error_handling": 4}, "TORCH_NCCL_ASYNC_ERROR_HANDLING (from "
                                        "nccl_profile_torch_async_error_handling) is '4'"),
    ({"ifname": ""}, "the cluster interface '' is not an interface name: run nccl_preflight first "
                     "(it sets ncclkit_cluster_ifname); to choose the NIC, set nccl_preflight_ifname or "
                     "nccl_preflight_cluster_cidr"),
    ({"ifname": "eth 1"}, "is not an interface name"),
    ({"cluster_networks": []}, "no cluster network is known: run nccl_preflight first"),
    ({"cluster_networks": ["10.0.0.300/24"]}, "'10.0.0.300/24' is not in CIDR form"),
    ({"extra_env": {"MY VAR": "x"}}, "'MY VAR' from nccl_profile_extra_env is not a variable name"),
    ({"extra_env": {"X": "a'b"}}, "X (from nccl_profile_extra_env) is \"a'b\": quotes, backslashes, $"),
    ({"extra_env": {"X": "$HOME/x"}}, "quotes, backslashes, $, ` and line breaks"),
    ({"extra_env": {"X": "two\nlines"}}, "line breaks"),
    ({"extra_env": {"X": " padded"}}, "remove the leading or trailing blanks"),
    ({"extra_env": {"X": "x" * 1024}}, "is 1024 characters; NCCL reads at most 1023"),
    ({"extra_env": {"X": ["a"]}}, "nccl_profile_extra_env.X is ['a']: give a string or a number"),
    ({"extra_env": ["X=1"]}, "nccl_profile_extra_env must be a mapping of NAME: value, not list"),
    ({"cloud_env": {"NCCL_IB_DISABLE": "yes"}}, "NCCL_IB_DISABLE (from ncclkit_cloud_nccl_env) is 'yes'"),
])
def test_bad_settings_are_refused_with_the_cause(changes, message):
    problems = env_problems(settings(**changes))
    assert any(message in problem for problem in problems), problems
    with pytest.raises(NcclEnvError):
        profile_env(settings(**changes))


def test_every_problem_is_reported_at_once():
    problems = env_problems(settings(debug="LOUD", tuning={"NCCL_PROTO": "x", "NCCL_ALGO": "y"}))
    assert len(problems) == 3


def test_the_flight_recorder_dumps_every_rank_into_one_folder_on_a_timeout():
    env = profile_env(settings(flight_recorder_entries="2000", flight_recorder_dir="/var/tmp/fr/"))
    assert env["TORCH_NCCL_TRACE_BUFFER_SIZE"] == "2000" and env["TORCH_NCCL_DUMP_ON_TIMEOUT"] == "1"
    # Both names torch has used for the dump prefix (2.5 renamed it).
    assert env["TORCH_FR_DUMP_TEMP_FILE"] == env["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"] == "/var/tmp/fr/nccl_trace_rank_"
    assert not {"TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_FR_DUMP_TEMP_FILE"} & set(
        profile_env(settings(flight_recorder_entries=0, flight_recorder_dir="/var/tmp/fr")))


@pytest.mark.parametrize("entries, folder, words", [
    ("many", "/var/tmp/fr", "nccl_profile_flight_recorder_entries must be a whole number"),
    (-1, "/var/tmp/fr", "nccl_profile_flight_recorder_entries must be a whole number"),
    (100, "var/tmp/fr", "nccl_profile_flight_recorder_dir must be an absolute folder"),
    (100, "/tmp/$(reboot)", "nccl_profile_flight_recorder_dir must be an absolute folder"),
    (100, "/var/tmp/../etc", "nccl_profile_flight_recorder_dir must be an absolute folder"),
])
def test_a_bad_flight_recorder_setting_is_refused(entries, folder, words):
    problems = env_problems(settings(flight_recorder_entries=entries, flight_recorder_dir=folder))
    assert any(words in problem for problem in problems), problems
