"""Property tests for the parsers of host output that the landed roles read: nvidia-smi CSV, the
RDMA port lines, `nvidia-smi topo -m`, profile files, AutoDL's network_turbo, `fi_info`, the
firewall rulesets (nft JSON, iptables-save text), netlink attributes and the Gloo result lines.
Whatever they are given, they return their documented shape or raise their own error type."""

import json
import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.ncclkit.cluster.plugins.module_utils.check import host as check_host
from ansible_collections.ncclkit.cluster.plugins.module_utils.clouds.aws.efa_host import efa_devices, fi_info_version
from ansible_collections.ncclkit.cluster.plugins.module_utils.host import nics as linux_nics
from ansible_collections.ncclkit.cluster.plugins.module_utils.host.container import parse_network_turbo
from ansible_collections.ncclkit.cluster.plugins.module_utils.host.gpus import parse_gpus as nvidia_smi_gpus
from ansible_collections.ncclkit.cluster.plugins.module_utils.host.rdma import (
    erdma_devices,
    rdma_ports,
    rdma_transport,
)
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.firewall import evidence as firewall_evidence
from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.gloo import gloo_perf

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Pieces of real outputs, so that generated inputs reach the parsers' branches.
PIECES = ["0, NVIDIA H200, 9.0, 580.159.04, 143771, 00000000:00:06.0", ",", "mlx5_0|1|4: ACTIVE|InfiniBand|mlx5_core",
          "erdma_0|1|4: ACTIVE|Ethernet|erdma", "rdmap0s6|1|4: ACTIVE|Unspecified|efa", "|", "\t", "GPU0", "NIC0",
          "X ", "PIX", "SYS", "NODE", "export http_proxy=http://10.0.0.7:12798", "no_proxy=localhost",
          "NCCL_SOCKET_IFNAME=eth1", "provider: efa", "    version: 122.0", "provider: tcp;ofi_rxm", "'", '"',
          "\n", " ", "=", "#", "-A INPUT -p tcp --dport 22 -j DROP", "*filter", ":INPUT DROP [0:0]", "COMMIT",
          "-A INPUT -s 10.0.0.0/8 -j ACCEPT", "-N ncclkit", "-A INPUT -i eth1 -j ncclkit", "ncclkit-gloo {",
          '"rank": 0', '"busbw_gbps": 1.5', "}"]
TEXT = st.one_of(st.text(max_size=400),
                 st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=12)), max_size=40).map("".join))
LINES = TEXT.map(str.splitlines)
NFT_KEYS = st.sampled_from(["nftables", "table", "chain", "rule", "expr", "family", "name", "hook", "policy",
                            "match", "left", "right", "op", "payload", "field", "accept", "drop", "jump", "set",
                            "prefix", "addr", "len", "meta", "key", "iifname", "tcp", "dport", "saddr", "ip"])
JSON = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8)),
                    lambda inner: st.one_of(st.lists(inner, max_size=4),
                                            st.dictionaries(NFT_KEYS | st.text(max_size=5), inner, max_size=4)),
                    max_leaves=25)


@FAST
@given(LINES)
def test_nvidia_smi_rows_are_gpus_or_a_value_error(lines):
    try:
        gpus = nvidia_smi_gpus(lines)
    except ValueError as error:
        assert any(words in str(error) for words in ("nvidia-smi printed", "invalid literal", "could not convert"))
        return
    assert all(isinstance(gpu["index"], int) and isinstance(gpu["memory_total_mib"], int) for gpu in gpus)


@FAST
@given(LINES)
def test_rdma_port_lines_always_give_ports_and_a_transport(lines):
    ports = rdma_ports(lines)
    assert all(set(port) == {"device", "port", "state", "link_layer", "driver", "active", "usable"} for port in ports)
    assert rdma_transport(lines) in ("efa", "erdma", "ib", "socket")
    assert set(erdma_devices(lines)) <= {port["device"] for port in ports}
    assert set(efa_devices(lines)) <= {port["device"] for port in ports}


@FAST
@given(TEXT)
def test_profile_files_topology_turbo_and_fi_info_never_raise(text):
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in check_host.assignments(text).items())
    assert isinstance(check_host.parse_topo(text), dict)
    env, problems = parse_network_turbo(text)
    assert set(env) <= {"http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"}
    assert all(isinstance(problem, str) for problem in problems)
    assert isinstance(fi_info_version(text), str)


def test_a_proxy_url_with_an_open_ipv6_bracket_is_a_problem_not_an_error():
    # Found by the property test above: urlsplit raises on "http://[".
    env, problems = parse_network_turbo("export http_proxy=A://[ https_proxy=http://[::1\n")
    assert env == {} and problems == ["http_proxy is not an http(s) URL", "https_proxy is not an http(s) URL"]


@FAST
@given(JSON, TEXT)
def test_firewall_rulesets_of_any_shape_give_a_model_and_verdicts(nft, save):
    model = firewall_evidence.ruleset_model(nft if isinstance(nft, dict) else {"nftables": nft}, (), save)
    assert {"chains", "bases"} <= set(model) <= {"chains", "bases", "unreadable"}
    found = firewall_evidence.drops(model, "10.0.0.2", 29500, "eth1")
    assert all(isinstance(firewall_evidence.describe(item), str) for item in found)


@FAST
@given(st.binary(max_size=300), st.integers(min_value=0, max_value=40))
def test_netlink_attributes_of_any_bytes_stay_inside_the_message(data, offset):
    found = linux_nics._attributes(data, offset)
    assert all(isinstance(kind, int) and len(value) <= len(data) for kind, value in found.items())


def test_a_ruleset_of_an_unknown_shape_is_named_not_a_traceback():
    model = firewall_evidence.ruleset_model({"nftables": [None, {"chain": "x"}]}, (), "*filter\n:INPUT ACCEPT [0:0]\n")
    assert model["unreadable"] == ["nft ruleset: AttributeError"] and model["bases"] == ["xt INPUT"]


def test_a_netlink_attribute_is_read_as_the_kernel_lays_it_out():
    # rtattr: length 9 (4 header + "eth1\0"), type 3 (IFLA_IFNAME), padded to 12.
    data = struct.pack("HH", 9, 3) + b"eth1\0" + b"\0\0\0" + struct.pack("HH", 8, 4) + struct.pack("I", 9000)
    assert linux_nics._attributes(data, 0) == {3: b"eth1\0", 4: struct.pack("I", 9000)}


@FAST
@given(LINES, st.integers(min_value=1, max_value=4))
def test_gloo_result_lines_of_any_text_give_gated_facts(lines, ranks):
    facts = gloo_perf(lines, ranks, 1.0)
    assert isinstance(facts["passed"], bool) and json.dumps(facts)


INVENTORY_PIECES = ["cluster:\n", "  hosts:\n", "    node1:\n", "      ansible_host: 10.0.0.1\n", "[cluster]\n",
                    "node2 ansible_port=22\n", "all:\n", "  children:\n", "    cluster:\n", ": ", "- ", "{", "[",
                    "'", "\t", "\n", "node[1:3]\n", "ansible_port: abc\n"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(st.sampled_from(INVENTORY_PIECES), st.text(max_size=10)), max_size=25).map("".join),
       st.sampled_from(["hosts.yml", "hosts.ini", "hosts"]))
def test_any_inventory_gives_its_cluster_hosts_or_one_inventory_error(tmp_path_factory, text, name):
    from ncclkit.commands.check import InventoryError, cluster_hosts

    path = tmp_path_factory.mktemp("inv") / name
    path.write_text(text)
    try:
        hosts = cluster_hosts(path)
    except InventoryError as error:
        assert str(error).startswith("inventory ") and "\n" not in str(error).strip()
        return
    assert hosts and all(isinstance(host, str) for host in hosts)
