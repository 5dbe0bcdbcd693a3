"""The NCCL/Gloo/torch log reader, on real samples and on synthetic lines of every finding."""

import json
from pathlib import Path

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.log import (
    MAX_BYTES,
    NcclLogError,
    read_nccl_log,
    read_nccl_log_files,
)

SAMPLES = Path(__file__).resolve().parents[4] / "samples"


def sample(name: str) -> bytes:
    """A sample without its "# source:" line, which quotes the failure it shows."""
    data = (SAMPLES / name).read_bytes()
    first, dummy, rest = data.partition(b"\n")
    return rest if first.startswith(b"# source:") else data


def codes(result, host=None, severity=None):
    """The codes found, without completion_unknown: a snippet of NCCL lines never shows its end (issue 25)."""
    return {f["code"] for f in result["findings"] if f["code"] != "completion_unknown"
            and (host is None or f["host"] == host) and (severity is None or f["severity"] == severity)}


def finding(result, code, host=None):
    matches = [f for f in result["findings"] if f["code"] == code and (host is None or f["host"] == host)]
    assert matches, f"no {code} for {host} in {[(f['code'], f['host']) for f in result['findings']]}"
    return matches[0]


# ---- the samples measured here and the public ones the project started with ----

def test_bad_socket_ifname_names_the_missing_interface_and_the_failed_test_on_node0():
    result = read_nccl_log(sample("h200-2host-bad-socket-ifname.txt"))
    assert {"no_socket_interface", "test_nccl_failure"} <= codes(result, "node0", "error")
    missing = finding(result, "no_socket_interface", "node0")
    assert "NCCL_SOCKET_IFNAME" in missing["cause"] and "NCCL_SOCKET_IFNAME=eth1" in missing["fix"]
    assert missing["evidence"].startswith("[2026-12-02 09:05:03] node0:2841:2841 [0] bootstrap.cc:114 NCCL WARN")
    assert missing["line"] == 9 and missing["source"] == "content"
    assert "invalid usage" in finding(result, "test_nccl_failure", "node0")["cause"]
    assert set(result["hosts"]) == {"node0", "node1"}  # node1 from the nccl-tests device table
    assert result["findings"][0]["code"] == "no_socket_interface"  # the cause before its consequence


def test_socket_debug_info_reports_loopback_bootstrap_socket_transport_and_version_on_both_hosts():
    result = read_nccl_log(sample("h200-2host-socket-nccl-debug-info.txt"))
    for host in ("node0", "node1"):
        facts = result["hosts"][host]
        assert facts["bootstrap_nics"] == [{"name": "lo", "address": "127.0.0.1"}]
        assert facts["net_nics"] == [{"name": "lo", "address": "127.0.0.1", "kind": "Socket"}]
        assert facts["transport"] == "Socket"
        assert facts["nccl_versions"] == ["2.28.9+cuda13.0"]
        assert facts["env"]["NCCL_SOCKET_IFNAME"] == "lo" and facts["env"]["NCCL_IB_DISABLE"] == "1"
        assert {"ib_missing", "ib_disabled"} <= codes(result, host, "info")
        assert "loopback_nic" in codes(result, host, "warning")
    assert result["multi_node"] is True and result["nccl_versions"] == ["2.28.9+cuda13.0"]
    assert not codes(result, severity="error")


def test_socket_debug_info_with_ib_expected_makes_ib_errors():
    result = read_nccl_log(sample("h200-2host-socket-nccl-debug-info.txt"), expected_transport="ib")
    assert {"socket_instead_of_ib", "ib_missing", "ib_disabled"} <= codes(result, "node0", "error")


def test_issue287_failure_shows_the_socket_nic_version_missing_verbs_and_the_test_failure():
    result = read_nccl_log(sample("06c-nccl-tests-issue287-2gpu-nccl-debug-info-failure.txt"))
    facts = result["hosts"]["GENOA-06"]
    assert facts["bootstrap_nics"] == [{"name": "enp227s0f0", "address": "192.168.1.250"}]
    assert facts["net_nics"][0] == {"name": "enp227s0f0", "address": "192.168.1.250", "kind": "Socket"}
    assert facts["net_nics"][1]["address"].startswith("fe80::52b1")
    assert facts["transport"] == "Socket" and facts["nccl_versions"] == ["2.25.1+cuda12.8"]
    assert "ib_missing" in codes(result, "GENOA-06", "info")
    assert {"test_nccl_failure", "cuda_error"} <= codes(result, "GENOA-06", "error")
    assert result["multi_node"] is False and "virtual_nic" not in codes(result)


def test_issue287_with_a_cluster_cidr_finds_the_nic_outside_it():
    result = read_nccl_log(sample("06c-nccl-tests-issue287-2gpu-nccl-debug-info-failure.txt"),
                           cluster_cidr="10.0.0.0/8")
    outside = [f for f in result["findings"] if f["code"] == "nic_outside_cluster"]
    assert len(outside) == 2  # the IPv4 NIC (bootstrap and NET) and the link-local one (NET)
    assert "enp227s0f0 192.168.1.250 for bootstrap and NET/Socket traffic" in outside[0]["cause"]
    assert "10.0.0.0/8" in outside[0]["cause"] and "NCCL_SOCKET_IFNAME" in outside[0]["fix"]
    inside = read_nccl_log(sample("06c-nccl-tests-issue287-2gpu-nccl-debug-info-failure.txt"),
                           cluster_ips=["192.168.1.250", "fe80::/10"])
    assert "nic_outside_cluster" not in codes(inside)


def test_tag_output_prefixes_keep_the_host_of_the_nccl_line():
    result = read_nccl_log(sample("04-nccl-ebpf-2rank-1gpu-hostid-socket-nccltests2.18.txt"))
    assert list(result["hosts"]) == ["lab"] and not codes(result, severity="error")


@pytest.mark.parametrize("path", sorted(path for path in SAMPLES.iterdir() if path.is_file()), ids=lambda p: p.name)
def test_every_sample_reads_into_plain_json(path):
    result = read_nccl_log_files([path])
    json.dumps(result)
    ras_json = path.name.startswith("nccl-ras-json")  # a report, read as a whole: no lines
    assert result["lines"] > 0 or ras_json
    for found in result["findings"]:
        assert found["severity"] in ("error", "warning", "info") and found["cause"] and found["fix"]
        assert found["source"] == str(path) and found["count"] >= 1
        assert (ras_json and found["line"] is None) or found["line"] >= 1


# ---- the public log samples added for this reader ----

@pytest.mark.parametrize("name, host, code, fragments", [
    ("log-nccl-tests-166-socket-connect-abort.txt", "ubuntu", "connect_failed",
     ["10.0.0.2 port 45763", "Software caused connection abort"]),
    ("log-nccl-tests-166-socket-connect-abort.txt", "ubuntu", "remote_exited", ["node1 port 57557"]),
    ("log-nccl-tests-166-socket-connect-abort.txt", "ubuntu", "nccl_internal_error", ["network"]),
    ("log-nccl-tests-166-socket-connect-abort.txt", "ubuntu", "test_nccl_failure", ["common.cu:958"]),
    ("log-sglang-3820-socketpollconnect-no-route.txt", "node5", "no_route", ["10.0.0.4 port 56849"]),
    ("log-nccl-pr1618-socketpollconnect-timeout-custom-prefix.txt", "unknown", "connect_timeout",
     ["172.16.30.229 port 39953"]),
    ("log-horovod-3929-duplicate-gpu-tag-output.txt", "smc-gpu-03", "duplicate_gpu", ["ranks 2 and 0", "1000"]),
    ("log-nccl-380-roce-ibv-create-cq.txt", "spark01", "ib_verbs_failed", ["ibv_create_cq"]),
    ("log-nccl-tests-252-ib-completion-error.txt", "kolyoz2", "ib_completion_error",
     ["10.0.35.1 port 49189", "status 4"]),
    ("log-mambatree-14-torch-no-socket-interface.txt", "unknown", "no_socket_interface", ["NCCL_SOCKET_IFNAME"]),
    ("log-mambatree-14-torch-no-socket-interface.txt", "unknown", "nccl_internal_error", ["network"]),
    ("log-nccl-1837-ifname-missing-bogus-family.txt", "twshared1016", "no_socket_interface", ["2.27"]),
    ("log-pytorch-107021-c10d-rendezvous-connection.txt", "unknown", "connect_timeout",
     ["192.0.0.1 port 1234", "60s"]),
    ("log-pytorch-107021-c10d-rendezvous-connection.txt", "unknown", "rendezvous_connection_error", ["C10d"]),
    ("log-pytorch-79388-c10d-timeout-tuple-address.txt", "unknown", "connect_timeout", ["IP1 port 2222"]),
    ("log-rl-swarm-197-c10d-errno110.txt", "unknown", "connect_timeout", ["::ffff:198.18.0.1 port 3254"]),
    ("log-vllm-6775-gloo-connectfullmesh.txt", "unknown", "gloo_connect_failed", ["Gloo"]),
    ("log-pytorch-15592-gloo-loopback-refused.txt", "unknown", "gloo_connect_failed",
     ["127.0.1.1 port 3210", "/etc/hosts"]),
    ("log-gloo-33-enforce-fail-refused-address-in-use.txt", "unknown", "gloo_connect_failed", ["Connection refused"]),
    ("log-gloo-33-enforce-fail-refused-address-in-use.txt", "unknown", "address_in_use", ["MASTER_PORT"]),
    ("log-llamafactory-7396-watchdog-timeout.txt", "unknown", "collective_timeout", ["ALLREDUCE", "600060 ms"]),
    ("log-pytorch-150916-remote-error-closed-by-peer.txt", "unknown", "remote_exited",
     ["ip-172-31-36-217.eu-north-1.compute.internal port 59116"]),
    ("log-pytorch-68893-nccl27-bootstrap-veth.txt", "ip-172-31-0-137", "virtual_nic", ["veth75fa783"]),
    ("log-pytorch-68893-nccl27-bootstrap-veth.txt", "ip-172-31-0-137", "ib_missing", ["libibverbs"]),
])
def test_public_samples_give_their_finding(name, host, code, fragments):
    result = read_nccl_log(sample(name))
    finding(result, code, host)
    causes = [f["cause"] for f in result["findings"] if f["code"] == code and f["host"] == host]
    assert any(all(fragment in cause for fragment in fragments) for cause in causes), causes


def test_nccl27_sample_reads_the_old_bootstrap_listing_and_the_bare_version_line():
    facts = read_nccl_log(sample("log-pytorch-68893-nccl27-bootstrap-veth.txt"))["hosts"]["ip-172-31-0-137"]
    assert [nic["name"] for nic in facts["bootstrap_nics"]] == ["ens5", "veth75fa783"]
    assert facts["bootstrap_nics"][1]["address"] == "fe80::14ad:64ff:fe64:b31e%veth75fa783"
    assert facts["nccl_versions"] == ["2.7.8+cuda11.1"]  # bare line, one host in the log


def test_roce_sample_lists_the_hca_and_the_out_of_band_nic():
    facts = read_nccl_log(sample("log-nccl-380-roce-ibv-create-cq.txt"))["hosts"]["spark01"]
    assert facts["net_nics"] == [{"name": "mlx5_1:1", "kind": "RoCE"},
                                 {"name": "ens192f1", "address": "10.150.178.134", "kind": "OOB"}]
    assert facts["transport"] == "IB" and facts["nccl_versions"] == ["2.7.8+cuda11.0"]


def test_efa_sample_uses_ofi_efa_and_passes_when_efa_is_expected():
    result = read_nccl_log(sample("log-nccl-1597-efa-libfabric.txt"), expected_transport="efa")
    assert result["hosts"]["8h200-3"]["transport"] == "OFI(EFA)"
    assert result["hosts"]["8h200-3"]["net_nics"] == [{"name": "efa", "kind": "OFI"}]
    assert "socket_instead_of_efa" not in codes(result, "8h200-3")


def test_efa_fallback_to_the_tcp_provider_is_an_error_when_efa_is_expected():
    result = read_nccl_log(sample("log-nccl-229-efa-fallback-tcp-ofi-rxm.txt"), expected_transport="efa")
    for host in ("ip-192-168-16-255", "ip-192-168-29-243"):
        assert result["hosts"][host]["transport"] == "OFI(tcp;ofi_rxm)"
        assert "OFI(tcp;ofi_rxm)" in finding(result, "socket_instead_of_efa", host)["cause"]
    assert result["nccl_versions"] == ["2.4.6+cuda10.0"]  # a bare line two hosts could have written
    assert not codes(read_nccl_log(sample("log-nccl-229-efa-fallback-tcp-ofi-rxm.txt")))


def test_labels_give_unlabelled_torch_lines_the_host_of_their_nccl_lines():
    text = ("[1,1]<stdout>:node1:77:77 [0] NCCL INFO Bootstrap : Using eth1:10.0.0.2<0>\n"
            "[1,0]<stdout>:node0:66:66 [0] NCCL INFO Bootstrap : Using eth1:10.0.0.1<0>\n"
            "[1,1]<stderr>:RuntimeError: Gloo connectFullMesh failed with [../gloo/tcp/pair.cc:144] no error\n")
    assert finding(read_nccl_log(text), "gloo_connect_failed")["host"] == "node1"


def test_lines_without_a_host_go_to_the_only_host_then_to_default_host():
    one = "h1:1:1 [0] NCCL INFO Bootstrap : Using eth1:10.0.0.1<0>\nChildFailedError:\n"
    assert finding(read_nccl_log(one), "child_failed")["host"] == "h1"
    assert finding(read_nccl_log("ChildFailedError:\n", default_host="web1"), "child_failed")["host"] == "web1"
    assert finding(read_nccl_log("ChildFailedError:\n"), "child_failed")["host"] == "unknown"


# ---- synthetic lines: every finding, in the line formats of 2.12 to 2.30 ----

PREFIXES = {
    "plain": "",
    "nccl_timestamp": "[2026-12-02 09:05:03] ",
    "custom_timestamp": "2026-12-02T09:05:03.123456+0000 ",
    "epoch_timestamp": "1764666303.123 ",
    "tag_output": "[1,0]<stdout>:",
    "tag_output_stderr": "[1,0]<stderr>:",
    "torchrun": "[rank0]:",
    "ansi": "\x1b[36m",
}

H = "gpu-a:4242:4251 [0]"
# (code, line, fragments of the cause); NCCL lines name host gpu-a.
SYNTHETIC = [
    ("no_socket_interface", f"{H} bootstrap.cc:114 NCCL WARN Bootstrap : no socket interface found", []),
    ("no_socket_interface", f"{H} misc/socket.cc:342 NCCL WARN Bootstrap : no socket interface found", []),
    ("no_socket_interface", "RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:83] "
                            "ifa != nullptr. Unable to find address for: eth9", ["GLOO_SOCKET_IFNAME=eth9"]),
    ("connect_refused", f"{H} misc/socket.cc:456 NCCL WARN Net : Connect to 10.0.0.2<43781> failed : "
                        "Connection refused", ["10.0.0.2 port 43781"]),
    ("connect_refused", f"{H} misc/socket.cc:483 NCCL WARN socketStartConnect: Connect to 10.0.0.2<43781> failed : "
                        "Connection refused", ["10.0.0.2 port 43781"]),
    ("connect_refused", f"{H} misc/socket.cc:578 NCCL WARN socketPollConnect: connect to 10.0.0.2<36141> returned "
                        "Connection refused, exceeded error retry count after 35 attempts", ["10.0.0.2 port 36141"]),
    ("connect_refused", f"{H} misc/socket.cc:533 NCCL WARN socketPollConnect: Connect to 10.0.0.2<36141> returned "
                        "111(Connection refused) errno 115(Operation now in progress)", ["10.0.0.2 port 36141"]),
    ("connect_refused", f"{H} misc/socket.cc:544 NCCL WARN socketPollConnect: connect returned Connection refused, "
                        "exceeded error retry count (35)", ["refused"]),
    ("connect_refused", "[W socket.cpp:663] [c10d] The client socket has failed to connect to [node0]:29500 "
                        "(errno: 111 - Connection refused).", ["node0 port 29500"]),
    ("connect_timeout", f"{H} misc/socket.cc:483 NCCL WARN socketStartConnect: Connect to 10.0.0.2<43781> failed : "
                        "Connection timed out", ["10.0.0.2 port 43781"]),
    ("connect_timeout", f"{H} misc/socket.cc:578 NCCL WARN socketPollConnect: connect to 10.0.0.2<36141> returned "
                        "Connection timed out, exceeded error retry count after 35 attempts", ["10.0.0.2 port 36141"]),
    ("connect_timeout", "[W1202 09:05:03.000 socket.cpp:752] [c10d] The client socket has failed to connect to "
                        "[master-0]:29500 (errno: 110 - Connection timed out).", ["master-0 port 29500"]),
    ("connect_timeout", "torch.distributed.DistNetworkError: The client socket has timed out after 1800000ms while "
                        "trying to connect to (10.0.0.1, 29500).", ["10.0.0.1 port 29500", "1800000ms"]),
    ("no_route", f"{H} misc/socket.cc:456 NCCL WARN Net : Connect to fe80::1<40861> failed : No route to host",
     ["fe80::1 port 40861"]),
    ("connect_failed", f"{H} misc/socket.cc:456 NCCL WARN Net : Connect to 10.0.0.2<40861> failed : Cannot assign "
                       "requested address", ["Cannot assign requested address"]),
    ("retry_exceeded", f"{H} net_fastsocket.cc:674 NCCL WARN Maximum retry reached for connect 3.", []),
    ("remote_exited", f"{H} misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer "
                      "gpu-b<57557>", ["gpu-b port 57557"]),
    ("remote_exited", f"{H} misc/socket.cc:60 NCCL WARN socketProgressOpt: Call to recv from 10.0.0.2<33759> failed "
                      ": Connection reset by peer", ["10.0.0.2 port 33759", "Connection reset by peer"]),
    ("remote_exited", "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp"
                      ":275, remote process exited or there was a network error, NCCL version 2.20.5", []),
    ("remote_exited", "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
                      "prematurely.", []),
    ("duplicate_gpu", f"{H} init.cc:904 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000",
     ["ranks 1 and 0"]),
    ("test_nccl_failure", "gpu-a: Test NCCL failure common.cu:1550 'unhandled system error (run with NCCL_DEBUG=INFO "
                          "for details) / '", ["common.cu:1550", "unhandled system error"]),
    ("nccl_internal_error", "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
                            "ProcessGroupNCCL.cpp:1691, internal error - please report this issue to the NCCL "
                            "developers, NCCL version 2.19.3", ["network"]),
    ("nccl_internal_error", "ncclInternalError: Internal check failed.", ["almost always the network"]),
    ("nccl_system_error", "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1191, "
                          "unhandled system error, NCCL version 2.11.4", ["socket"]),
    ("gloo_connect_failed", "RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/"
                            "pair.cc:144] no error", ["Gloo"]),
    ("gloo_connect_failed", "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:799] connect "
                            "[172.31.71.170]:13195: Connection refused", ["172.31.71.170 port 13195"]),
    ("gloo_connect_failed", "RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/pair.cc:446] "
                            "op.preamble.length <= op.nbytes. SO_ERROR: Connection timed out",
     ["Connection timed out"]),
    ("address_in_use", "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:176] bind: Address already in "
                       "use", []),
    ("address_in_use", "[W socket.cpp:436] [c10d] The server socket has failed to listen on [::]:29500 (errno: 98 - "
                       "Address already in use).", []),
    ("rendezvous_timeout", "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError", ["rendezvous"]),
    ("rendezvous_timeout", "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 "
                           "clients joined.", ["only 1 of 2"]),
    ("rendezvous_connection_error", "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The "
                                    "connection to the C10d store has failed. See inner exception for details.", []),
    ("collective_timeout", "[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout: "
                           "WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
                           "600013 milliseconds before timing out.", ["ALLREDUCE", "600013 ms"]),
    ("child_failed", "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:", []),
    ("ib_verbs_failed", f"{H} misc/ibvwrap.cc:280 NCCL WARN Call to ibv_create_qp failed", ["ibv_create_qp"]),
    ("ib_completion_error", f"{H} transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer "
                            "10.0.0.2<55921> with status=12 opcode=1 len=0 vendor err 129 (Send)", ["status 12"]),
    ("ib_missing", f"{H} NCCL INFO Failed to open libibverbs.so[.1]", []),
    ("ib_missing", f"{H} misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]", []),
    ("ib_missing", f"{H} NCCL INFO NET/IB : No device found.", []),
    ("ib_disabled", f"{H} NCCL INFO NCCL_IB_DISABLE set by environment to 1.", []),
    ("efa_missing", f"{H} nccl_net_ofi_init:1415 NCCL WARN NET/OFI aws-ofi-nccl initialization failed", []),
    ("cuda_error", f"{H} enqueue.cc:1500 NCCL WARN Cuda failure 1 'invalid argument'", []),
    ("cuda_not_initialized", "test: Test CUDA failure common.cu:941 'system not yet initialized'", ["Fabric Manager"]),
    ("nccl_warning", f"{H} graph/search.cc:1135 NCCL WARN Could not find a path for pattern 4, falling back",
     ["Could not find a path"]),
]


@pytest.mark.parametrize("prefix", PREFIXES.values(), ids=PREFIXES.keys())
@pytest.mark.parametrize("code, line, fragments", SYNTHETIC,
                         ids=[f"{c}-{i}" for i, (c, dummy, dummy) in enumerate(SYNTHETIC)])
def test_every_finding_in_every_line_format(prefix, code, line, fragments):
    result = read_nccl_log(prefix + line + "\n", default_host="the-host")
    found = finding(result, code)
    for fragment in fragments:
        assert fragment in found["cause"]
    expected_host = "gpu-a" if line.startswith(H) else ("test" if line.startswith("test:") else
                                                        "gpu-a" if line.startswith("gpu-a:") else "the-host")
    assert found["host"] == expected_host
    assert found["evidence"].endswith(line[-40:])


@pytest.mark.parametrize("prefix", PREFIXES.values(), ids=PREFIXES.keys())
@pytest.mark.parametrize("listing, nics", [
    ("Bootstrap : Using eth0:10.0.0.1<0>", [{"name": "eth0", "address": "10.0.0.1"}]),      # 2.12 to 2.18
    ("Bootstrap: Using eth0:10.0.0.1<0>", [{"name": "eth0", "address": "10.0.0.1"}]),       # 2.19 and later
    ("Bootstrap : Using [0]eth0:10.0.0.1<0> [1]eno1:avahi:169.254.3.1<0>",                   # before 2.12, aliases
     [{"name": "eth0", "address": "10.0.0.1"}, {"name": "eno1:avahi", "address": "169.254.3.1"}]),
])
def test_bootstrap_listings_of_every_version(prefix, listing, nics):
    result = read_nccl_log(f"{prefix}gpu-a:1:1 [0] NCCL INFO {listing}\n")
    assert result["hosts"]["gpu-a"]["bootstrap_nics"] == nics


@pytest.mark.parametrize("lines, transport, nics", [
    (["NET/Socket : Using [0]eth1:10.0.0.1<0> [1]eth2:10.1.0.1<0>", "Using network Socket"], "Socket",
     [{"name": "eth1", "address": "10.0.0.1", "kind": "Socket"},
      {"name": "eth2", "address": "10.1.0.1", "kind": "Socket"}]),
    (["NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB eth0:10.0.0.1<0>", "Using network IB"], "IB",
     [{"name": "mlx5_0:1", "kind": "IB"}, {"name": "mlx5_1:1", "kind": "IB"},
      {"name": "eth0", "address": "10.0.0.1", "kind": "OOB"}]),
    (["NET/OFI Selected provider is efa, fabric is efa-direct (found 16 nics)", "Using network Libfabric"],
     "OFI(EFA)", [{"name": "efa", "kind": "OFI"}]),
    (["NET/OFI Selected Provider is efa", "Using network AWS Libfabric"], "OFI(EFA)", [{"name": "efa", "kind": "OFI"}]),
    (["Using network IBext_v8"], "IB", []),
    (["Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0"], "Socket", []),
    (["Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0/GDRDMA"], "IB", []),
])
def test_net_listings_and_transport(lines, transport, nics):
    result = read_nccl_log("".join(f"gpu-a:1:1 [0] NCCL INFO {line}\n" for line in lines))
    assert result["hosts"]["gpu-a"]["transport"] == transport
    assert result["hosts"]["gpu-a"]["net_nics"] == nics


def test_trace_lines_with_seconds_and_function_are_read():
    text = "gpu-a:1:9 [0] 1234.567890 ncclProxyProgress:1201 NCCL TRACE Bootstrap: Using eth1:10.0.0.1<0>\n"
    assert read_nccl_log(text)["hosts"]["gpu-a"]["bootstrap_nics"] == [{"name": "eth1", "address": "10.0.0.1"}]


def test_retrying_connects_are_not_findings_until_nccl_gives_up():
    text = ("gpu-a:1:2 [1] NCCL INFO socketPollConnect: connect returned Connection refused, "
            "retrying (1/34) after sleep for 100 msec\n")
    assert not codes(read_nccl_log(text))


# ---- whole-log findings ----

def test_versions_that_differ_between_hosts_are_an_error_on_the_odd_host():
    text = ("a:1:1 [0] NCCL INFO NCCL version 2.28.9+cuda13.0\n"
            "b:2:2 [0] NCCL INFO NCCL version 2.28.9+cuda12.9\n"
            "c:3:3 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n")
    result = read_nccl_log(text)
    mismatch = [f for f in result["findings"] if f["code"] == "nccl_version_mismatch"]
    assert [f["host"] for f in mismatch] == ["c"]  # the CUDA suffix does not count
    assert "2.21.5" in mismatch[0]["cause"] and "2.28.9 on a, b" in mismatch[0]["cause"]
    assert result["nccl_versions"] == ["2.28.9+cuda13.0", "2.28.9+cuda12.9", "2.21.5+cuda12.4"]


def test_two_versions_on_one_host_are_a_mismatch_there():
    text = ("a:1:1 [0] NCCL INFO NCCL version 2.28.9+cuda13.0\n"
            "a:2:2 [1] NCCL INFO NCCL version 2.18.1+cuda12.1\n")
    mismatch = finding(read_nccl_log(text), "nccl_version_mismatch", "a")
    assert "NCCL 2.18.1+cuda12.1 here, 2.28.9 on a" in mismatch["cause"] and mismatch["line"] == 2


def test_socket_instead_of_ib_and_efa_only_when_expected():
    text = "a:1:1 [0] NCCL INFO Using network Socket\n"
    assert not codes(read_nccl_log(text))
    assert not codes(read_nccl_log(text, expected_transport="socket"))
    assert "socket_instead_of_ib" in codes(read_nccl_log(text, expected_transport="ib"), "a", "error")
    assert "socket_instead_of_efa" in codes(read_nccl_log(text, expected_transport="efa"), "a", "error")
    assert not codes(read_nccl_log("a:1:1 [0] NCCL INFO Using network IB\n", expected_transport="ib"))


def test_cluster_cidr_and_cluster_ips_decide_which_nics_are_outside():
    text = ("a:1:1 [0] NCCL INFO Bootstrap : Using eth0:198.18.0.11<0>\n"
            "b:2:2 [0] NCCL INFO Bootstrap : Using eth1:10.0.0.12<0>\n")
    outside = read_nccl_log(text, cluster_cidr="10.0.0.0/16")
    assert [(f["host"], f["code"]) for f in outside["findings"]] == [("a", "nic_outside_cluster")]
    assert "eth0 198.18.0.11 for bootstrap" in outside["findings"][0]["cause"]
    assert "(10.0.0.0/16)" in outside["findings"][0]["fix"]
    by_ips = read_nccl_log(text, cluster_ips=["10.0.0.11", "10.0.0.12"])
    assert codes(by_ips, "a") == {"nic_outside_cluster"} and not codes(by_ips, "b")
    assert not codes(read_nccl_log(text, cluster_cidr="10.0.0.0/16, 198.18.0.0/24"))


def test_virtual_and_loopback_nics_are_warnings_only_on_multi_node_runs():
    one = "a:1:1 [0] NCCL INFO Bootstrap : Using docker0:172.17.0.1<0>\n"
    assert not codes(read_nccl_log(one))
    two = one + "a:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0\n"
    assert codes(read_nccl_log(two), "a", "warning") == {"virtual_nic"}


def test_identical_findings_are_merged_and_counted_and_errors_come_first():
    line = "a:1:1 [0] misc/socket.cc:1 NCCL WARN Net : Connect to 10.0.0.2<40000> failed : Connection refused\n"
    text = "a:1:1 [0] NCCL INFO NET/IB : No device found.\n" + line + line.replace("a:1:1", "a:1:7")
    result = read_nccl_log(text)
    assert [(f["code"], f["count"]) for f in result["findings"]] == [("connect_refused", 2), ("ib_missing", 1)]
    assert result["findings"][0]["line"] == 2
    other_peer = line.replace("10.0.0.2<40000>", "10.0.0.3<40000>")
    assert len(read_nccl_log(line + other_peer)["findings"]) == 2


def test_several_files_are_one_log(tmp_path):
    first, second = tmp_path / "node0.log", tmp_path / "node1.log"
    first.write_text("a:1:1 [0] NCCL INFO NCCL version 2.28.9+cuda13.0\n")
    second.write_text("b:1:1 [0] NCCL INFO NCCL version 2.27.3+cuda12.9\n")
    result = read_nccl_log_files([first, second])
    assert set(result["hosts"]) == {"a", "b"} and "nccl_version_mismatch" in codes(result)
    assert finding(result, "nccl_version_mismatch")["source"] in (str(first), str(second))


# ---- any input: only NcclLogError, with a reason ----

def test_bytes_that_are_not_utf8_are_read_with_a_note():
    data = "gpu-a:1:1 [0] bootstrap.cc:1 NCCL WARN Bootstrap : no socket interface found é\n".encode("latin-1")
    result = read_nccl_log(data)
    assert "no_socket_interface" in codes(result, "gpu-a")
    assert result["notes"] and "not valid UTF-8" in result["notes"][0]


def test_zero_padding_is_dropped_and_binary_input_is_refused():
    padded = b"gpu-a:1:1 [0] NCCL INFO NCCL version 2.28.9+cuda13.0\n" + b"\x00" * 10000
    assert read_nccl_log(padded)["nccl_versions"] == ["2.28.9+cuda13.0"]
    with pytest.raises(NcclLogError, match="binary"):
        read_nccl_log(bytes(range(256)) * 64)


def test_too_large_input_is_refused_with_the_limit():
    with pytest.raises(NcclLogError, match="over the 64 MiB limit"):
        read_nccl_log(b"x" * (MAX_BYTES + 1))
    with pytest.raises(NcclLogError, match="MiB limit"):
        read_nccl_log("x" * 100, max_bytes=10)


def test_a_huge_single_line_is_cut_and_read_quickly():
    line = "a" * 2_000_000 + ":1:1 [0] NCCL WARN " + "a:" * 500_000
    assert read_nccl_log(line)["lines"] == 1


@pytest.mark.parametrize("bad, message", [
    ({"data": 42}, "expected text or bytes"),
    ({"data": "", "cluster_cidr": "10.0.0.0/99"}, "not an IP address or network"),
    ({"data": "", "cluster_ips": ["not-an-ip"]}, "not an IP address or network"),
    ({"data": "", "expected_transport": "rdma"}, "expected_transport must be one of"),
])
def test_unusable_input_raises_nccl_log_error(bad, message):
    with pytest.raises(NcclLogError, match=message):
        read_nccl_log(**bad)


def test_unreadable_files_raise_nccl_log_error(tmp_path):
    with pytest.raises(NcclLogError) as missing:
        read_nccl_log_files([tmp_path / "missing.log"])
    assert str(missing.value) == (f"{tmp_path / 'missing.log'}: cannot read: No such file or directory; "
                                  "check the path and that the user running this can read it")
    with pytest.raises(NcclLogError, match="directory"):
        read_nccl_log_files(tmp_path)
    with pytest.raises(NcclLogError, match="expected a file path"):
        read_nccl_log_files([3])


def test_empty_input_is_nothing_to_judge_never_healthy():
    result = read_nccl_log(b"")
    assert result["hosts"] == {} and result["findings"] == [] and result["lines"] == 0
    assert result["judged"] is False and result["verdict"].startswith("NOTHING TO JUDGE: ")
    assert "NCCL_DEBUG=INFO" in result["notes"][0]
    prose = read_nccl_log("epoch 1 loss 0.53\nepoch 2 loss 0.41\n")
    assert prose["judged"] is False and "2 line(s)" in prose["verdict"]
