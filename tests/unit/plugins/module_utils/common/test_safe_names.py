"""The name rules shared by modules and filters: real names pass, anything a shell would read
differently is refused with one line naming the variable, the value and the rule."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.ncclkit.cluster.plugins.filter import common, network
from ansible_collections.ncclkit.cluster.plugins.module_utils.common import safe_names

FILTERS = {**common.FilterModule().filters(), **network.FilterModule().filters()}
SHELL_TRICKS = ["x$(reboot)", "x`id`", "x;reboot", "x|sh", "x&", "x>y", "x'y", 'x"y', "x\\y", "x y", "x\ny", "x*"]


@pytest.mark.parametrize("kind, good", [
    ("ifname", ["eth0", "eth0.100", "enp1s0f0np0", "ib0", "bond0", "veth_a-b", "a23456789012345"]),
    ("nccl_ifname_list", ["=eth1", "^lo,docker", "^=eth0", "eth", "ib0,ib1", "^docker0,lo"]),
    ("nft_name", ["filter", "my_table", "input", "fw.v2", "_x-1"]),
    ("nft_chain", ["inet filter input", "ip nat_x INPUT"]),
    ("zone", ["public", "trusted", "my-zone_2"]),
    ("hostname", ["node1", "gpu-01.example.com", "10.0.0.1", "fd00::1", "host_a"]),
])
def test_real_names_pass(kind, good):
    for value in good:
        safe_names.CHECKS[kind](value, "v")


@pytest.mark.parametrize("kind", ["ifname", "nccl_ifname_list", "nft_name", "zone", "hostname"])
def test_shell_characters_are_refused_everywhere(kind):
    for value in SHELL_TRICKS + ["", "-x"]:
        with pytest.raises(safe_names.UnsafeName) as error:
            safe_names.CHECKS[kind](value, "the_variable")
        message = str(error.value)
        assert message.startswith(f"the_variable is {value!r}: ") and "\n" not in message.replace(repr(value), "")


def test_the_kernels_interface_name_rules():
    for bad in ["a234567890123456", "eth:0", "eth/0", ".", "..", ".eth", "é" * 8]:
        with pytest.raises(safe_names.UnsafeName, match="1-15 characters"):
            safe_names.ifname(bad, "ncclkit_cluster_ifname")


def test_ncclks_list_syntax_is_only_where_nccl_reads_it():
    for bad in ["^", "=", "^lo,", "eth1,,eth2", "^^lo", "==eth1", "=eth1 eth2"]:
        with pytest.raises(safe_names.UnsafeName, match="NCCL's interface list"):
            safe_names.nccl_ifname_list(bad, "NCCL_SOCKET_IFNAME")
    with pytest.raises(safe_names.UnsafeName):
        safe_names.ifname("=eth1", "ncclkit_cluster_ifname")


def test_nft_chains_are_three_names_in_ip_or_inet():
    assert safe_names.nft_chain("inet  filter\tinput") == ("inet", "filter", "input")
    for bad in ["filter input", "inet filter", "ip6 filter input", "bridge f input", "inet filter in;put",
                "inet filter input extra"]:
        with pytest.raises(safe_names.UnsafeName, match="nccl_network_nftables_chains"):
            safe_names.nft_chain(bad)


def test_filters_refuse_or_list_the_problems():
    assert FILTERS["safe_name"]("node1", "hostname", "inventory_hostname") == "node1"
    with pytest.raises(AnsibleFilterError, match="inventory_hostname is 'a\\$\\(x\\)'"):
        FILTERS["safe_name"]("a$(x)", "hostname", "inventory_hostname")
    assert FILTERS["safe_name_problems"](["inet filter input", "inet f;x input"], "nft_chain", "chains") == [
        "chains is 'inet f;x input': 'f;x' is not a name: " + safe_names.NFT_NAME_RULE]
    assert FILTERS["safe_name_problems"]("", "zone", "z") == ["z is '': " + safe_names.ZONE_RULE]
    problems = FILTERS["firewall_source_problems"](["10.0.0.0/8", "10.0.0.0/0"], False)
    assert len(problems) == 1 and "'10.0.0.0/0' has host bits set" in problems[0]
