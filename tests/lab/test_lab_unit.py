"""The lab's pure parts and its refusals; none of this needs root or touches the machine."""

from __future__ import annotations

import os

import pytest
import yaml

from ncclkit import cli
from ncclkit.lab import LabError, LabPlan, preflight
from ncclkit.lab.inventory import checkout_root, render, written_by_lab
from ncclkit.lab.netns import host_batch, inside_batch
from ncclkit.lab.plan import IFNAMSIZ, MAX_INDEX, MAX_NODES, is_lab_link, is_lab_netns
from ncclkit.lab.state import StateDir


def test_names_and_addresses_follow_the_index():
    plan = LabPlan(7, node_count=3, outsider=True)
    assert [m.name for m in plan.members] == ["node1", "node2", "node3", "outsider"]
    node2 = plan.nodes[1]
    assert (node2.netns, node2.public_ip, node2.private_ip) == (
        "ncclkit7-node2", "198.18.7.12", "198.19.7.12")
    assert (node2.public_link, node2.private_link) == ("nk7p2", "nk7q2")
    outsider = plan.outsider_member
    assert (outsider.netns, outsider.public_ip, outsider.private_ip) == (
        "ncclkit7-outsider", None, "198.19.7.250")
    assert (plan.public_bridge, plan.private_bridge, plan.controller_ip) == (
        "nk7pub", "nk7priv", "198.18.7.1")


def test_link_names_fit_the_kernel_limit_at_the_extremes():
    plan = LabPlan(MAX_INDEX, node_count=MAX_NODES, outsider=True)
    names = [plan.public_bridge, plan.private_bridge]
    names += [link for m in plan.members for link in (m.public_link, m.private_link) if link]
    assert max(len(name) for name in names) <= IFNAMSIZ
    assert len({m.private_ip for m in plan.members}) == MAX_NODES + 1


@pytest.mark.parametrize("kwargs", [{"index": -1}, {"index": MAX_INDEX + 1},
                                    {"index": 0, "node_count": 0},
                                    {"index": 0, "node_count": MAX_NODES + 1},
                                    {"index": 0, "mtu": 100}])
def test_out_of_range_settings_are_refused(kwargs):
    with pytest.raises(LabError):
        LabPlan(**kwargs)


def test_a_lab_never_claims_another_labs_objects():
    assert is_lab_netns(1, "ncclkit1-node3") and is_lab_netns(1, "ncclkit1-outsider")
    assert not is_lab_netns(1, "ncclkit10-node3") and not is_lab_netns(1, "ncclkit1-node3x")
    assert all(is_lab_link(1, name) for name in ("nk1pub", "nk1priv", "nk1p2", "nk1q12", "nk1qo"))
    assert not any(is_lab_link(1, name) for name in ("nk10pub", "nk12p1", "nk1p", "eth0"))


def test_host_batch_isolates_public_ports_and_sets_the_private_mtu():
    lines = host_batch(LabPlan(3, node_count=2, outsider=True, mtu=9000))
    assert "link set nk3p1 type bridge_slave isolated on" in lines
    assert "addr add 198.18.3.1/24 dev nk3pub" in lines
    assert not any("198.19." in line for line in lines)   # the host has no private address
    assert "link add nk3qo mtu 9000 type veth peer name eth1 mtu 9000 netns ncclkit3-outsider" \
        in lines
    assert not any("nk3po" in line for line in lines)      # the outsider has no eth0


def test_inside_batch_routes_via_the_controller():
    plan = LabPlan(3, node_count=1, outsider=True)
    assert "route add default via 198.18.3.1 dev eth0" in inside_batch(plan, plan.nodes[0])
    assert not any("eth0" in line for line in inside_batch(plan, plan.outsider_member))


def test_inventory_lists_the_nodes_not_the_outsider(tmp_path):
    plan = LabPlan(4, node_count=2, outsider=True)
    text = render(plan, StateDir(4))
    data = yaml.safe_load(text)
    assert list(data["cluster"]["hosts"]) == ["node1", "node2"]
    assert data["cluster"]["hosts"]["node1"]["ncclkit_lab_private_ip"] == "198.19.4.11"
    # The lab's links share the machine's cores: a looser link gate, said in the header too.
    assert data["cluster"]["vars"]["nccl_network_link_median_fraction"] == 0.25
    assert "nccl_network_link_median_fraction is 0.25 here" in text.split("---", 1)[0]
    path = tmp_path / "hosts.yml"
    path.write_text(text)
    assert written_by_lab(path) == 4
    path.write_text("all: {}\n")
    assert written_by_lab(path) is None


def test_default_inventory_is_in_the_checkout(tmp_path):
    (tmp_path / "galaxy.yml").write_text("namespace: x\n")
    (tmp_path / "deep" / "er").mkdir(parents=True)
    assert checkout_root(tmp_path / "deep" / "er") == tmp_path.resolve()
    bare = tmp_path / "deep"
    (tmp_path / "galaxy.yml").unlink()
    assert checkout_root(bare) == bare.resolve()


@pytest.mark.parametrize("argv", [["lab", "up"], ["lab", "down"], ["lab", "status"],
                                  ["lab", "exec", "node1", "--", "true"]])
def test_not_root_is_one_clear_line(argv, monkeypatch, capsys):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err == "ncclkit lab needs root: run it with sudo\n"
    assert captured.out == ""


def test_a_missing_tool_names_its_package(monkeypatch, capsys):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(preflight, "find_tool", lambda name: None if name == "sshd" else name)
    assert cli.main(["lab", "up", "--index", "93"]) == 2
    assert capsys.readouterr().err == ("ncclkit lab needs sshd: "
                                       "apt-get install openssh-server\n")
    assert not StateDir(93).exists()


def test_exec_takes_options_before_the_double_dash():
    parser_args = ["lab", "exec", "node2", "--index", "5", "--", "ls", "-l", "--index"]
    head = parser_args[:parser_args.index("--")]
    args = cli.build_parser().parse_args(head)
    assert (args.node, args.index, args.command_argv) == ("node2", 5, [])


def test_double_dash_is_refused_where_no_command_is_taken(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["lab", "status", "--", "x"])
    assert exit_info.value.code == 2


def test_build_parser_has_the_lab_subcommands():
    parser = cli.build_parser()
    args = parser.parse_args(["lab", "up", "--nodes", "4", "--outsider", "--mtu", "9000",
                              "--index", "12", "--inventory", "x.yml"])
    assert (args.nodes, args.outsider, args.mtu, args.index, args.inventory) == (
        4, True, 9000, 12, "x.yml")
