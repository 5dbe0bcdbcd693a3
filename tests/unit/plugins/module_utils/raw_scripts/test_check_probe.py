"""The check's probe: nccl_check's probe step (every host is given one map of host names and leaves
itself out), the same code run as a script as nccl_preflight runs it, its plan and how the judge reads it."""

import json
import os
import shutil
import socket
import subprocess
import sys

import pytest
from ansible.errors import AnsibleFilterError
from ansible.module_utils.testing import patch_module_args

from ansible_collections.ncclkit.cluster.plugins.filter.check import probes_of
from ansible_collections.ncclkit.cluster.plugins.filter.check import nccl_check_probe_targets
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.reachability.plan import probe_peers
from ansible_collections.ncclkit.cluster.plugins.modules import nccl_check
from conftest import REPO_ROOT


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.skipif(shutil.which("ping") is None, reason="needs ping (iputils-ping)")
def probe(capsys, **args):
    with patch_module_args(dict({"step": "probe", "source": "127.0.0.1", "timeout": 1.0}, **args)), \
            pytest.raises(SystemExit) as exit_info:
        nccl_check.main()
    assert exit_info.value.code == 0
    return json.loads(capsys.readouterr().out)["probes"]


@pytest.mark.skipif(shutil.which("ping") is None, reason="needs ping (iputils-ping)")
def test_the_probe_leaves_itself_out_and_reports_a_closed_rendezvous(capsys):
    probes = probe(capsys, me="node1", peers="full",
                   targets={"node1": ["127.0.0.1"], "node2": ["127.0.0.1"], "node3": []},
                   master={"addr": "127.0.0.2", "port": free_port()})
    assert probes["hostname"] == {"node2": True, "node3": False}
    assert probes["master"] == "refused"


@pytest.mark.skipif(shutil.which("ping") is None, reason="needs ping (iputils-ping)")
def test_a_ring_probe_asks_the_neighbours_and_the_first_host_only(capsys):
    targets = {f"node{i}": ["127.0.0.1"] for i in range(8)}
    probes = probe(capsys, me="node4", peers="ring", targets=targets, master={})
    assert sorted(probes["hostname"]) == ["node0", "node3", "node5"]
    assert all(probes["hostname"].values()) and probes["master"] is None


# The role runs the probe's text with the host's Python through raw, as below.
CODE = (REPO_ROOT / "plugins" / "module_utils" / "raw_scripts" / "check_probe.py").read_text()


def run_script(request):
    done = subprocess.run([sys.executable, "-c", CODE, json.dumps(request)], capture_output=True, text=True,
                          timeout=30, check=True)
    return json.loads(done.stdout)["probes"]


def test_the_script_says_open_refused_and_unreachable_peers_as_the_module_does():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        opened = run_script({"source": "127.0.0.1", "targets": {"node2": ["127.0.0.1"], "node3": []},
                             "master": {"addr": "127.0.0.2", "port": port}, "timeout": 1.0})
    assert opened["master"] == "refused"   # listening on 127.0.0.1 only: 127.0.0.2 refuses
    assert opened["hostname"] == ({"node2": True, "node3": False} if shutil.which("ping") else
                                  {"node2": None, "node3": False})
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        assert run_script({"targets": {}, "master": {"addr": "127.0.0.1", "port": listener.getsockname()[1]}})[
            "master"] == "open"


def test_the_plan_gives_every_host_what_probe_peers_gives_it():
    names = [f"node{i}" for i in range(7)]
    resolved = {name: [f"10.0.0.{i}"] for i, name in enumerate(names)}
    resolved["node3"] = []
    plan = nccl_check_probe_targets(resolved)
    for name in names:
        assert list(plan[name]) == probe_peers(names, name, "ring")
        assert all(plan[name][peer] == resolved[peer] for peer in plan[name])
    assert set(nccl_check_probe_targets(resolved, "full")["node0"]) == set(names) - {"node0"}
    with pytest.raises(AnsibleFilterError, match="mode 'star'"):
        nccl_check_probe_targets(resolved, "star")


def test_the_judge_reads_the_scripts_line_through_a_terminal_and_fails_on_none():
    line = json.dumps({"probes": {"hostname": {"node2": False}, "master": "timeout"}})
    registered = {"stdout": f"Warning: something on stderr\r\n{line}\r\n", "rc": 0}
    assert probes_of(registered, "node1") == {"hostname": {"node2": False}, "master": "timeout"}
    assert probes_of({"probes": {"master": None}}, "node1") == {"master": None}
    assert probes_of({}, "node1") == {}
    with pytest.raises(AnsibleFilterError, match="node1's probe printed no result: 'Traceback"):
        probes_of({"stdout": "Traceback (most recent call last):\r\n", "rc": 0}, "node1")


def test_on_the_master_the_script_names_who_already_holds_the_rendezvous_port():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        held = run_script({"source": "127.0.0.1", "targets": {}, "master": {"addr": "127.0.0.1", "port": port}})
    assert held["master"] is None   # the master does not dial itself
    assert held["master_holder"].endswith(f"(pid {os.getpid()})"), held
    free = run_script({"source": "127.0.0.1", "targets": {}, "master": {"addr": "127.0.0.1", "port": free_port()}})
    assert free["master_holder"] is None
    elsewhere = run_script({"source": "127.0.0.2", "targets": {}, "master": {"addr": "127.0.0.1", "port": port}})
    assert elsewhere["master_holder"] is None   # only the master looks at its own port


@pytest.mark.skipif(shutil.which("ping") is None, reason="needs ping (iputils-ping)")
def test_the_script_sends_echoes_that_fill_the_mtu_with_dont_fragment():
    # Loopback's MTU (65536) takes a 9000-byte frame, and refuses a payload no IPv4 packet can carry.
    fits = run_script({"targets": {}, "master": {}, "path": {"mtu": 9000, "peers": {"node2": "127.0.0.1"}}})
    assert fits["path"] == {"node2": {"address": "127.0.0.1", "mtu": 9000, "small": True, "large": True}}
    assert run_script({"targets": {}, "master": {}, "path": {"mtu": 576, "peers": {"node2": "127.0.0.1"}}})[
        "path"] == {}   # no MTU worth asking about
    assert run_script({"targets": {}, "master": {}})["path"] == {}


def test_a_path_that_drops_full_frames_is_told_from_one_that_drops_everything(monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    from ansible_collections.ncclkit.cluster.plugins.module_utils.raw_scripts import check_probe

    answers = {("10.0.0.2", None): True, ("10.0.0.2", 8972): False,      # a bridge at 1500
               ("10.0.0.3", None): False, ("10.0.0.3", 8972): False,     # down: not an MTU question
               ("10.0.0.4", None): True, ("10.0.0.4", 8972): None}       # a ping without -M
    monkeypatch.setattr(check_probe, "ping", lambda address, timeout, size=None: answers[(address, size)])
    with ThreadPoolExecutor(4) as pool:
        path = check_probe.path_mtu({"node2": "10.0.0.2", "node3": "10.0.0.3", "node4": "10.0.0.4"}, 9000, 1.0, pool)
    assert {peer: (r["small"], r["large"]) for peer, r in path.items()} == {
        "node2": (True, False), "node3": (False, False), "node4": (True, None)}


def test_the_script_asks_the_peers_ephemeral_ports_and_a_closed_one_counts_as_let_in():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listening, closed = listener.getsockname()[1], free_port()
        probes = run_script({"source": "127.0.0.1", "targets": {}, "master": {},
                             "path": {"mtu": 0, "peers": {"node2": "127.0.0.1", "node3": "127.0.0.1"},
                                      "ports": {"node2": [listening, closed]}}})
    # Nothing needs to listen: a refusal is the peer's TCP stack answering, past its firewall.
    assert probes["ports"] == {"node2": {str(listening): "open", str(closed): "refused"}}
    assert run_script({"targets": {}, "master": {}})["ports"] == {}


@pytest.mark.skipif(shutil.which("ip") is None, reason="needs ip (iproute2)")
def test_the_script_says_which_interface_the_route_to_each_neighbour_leaves_by():
    probes = run_script({"targets": {}, "master": {}, "path": {"mtu": 0, "peers": {"node2": "127.0.0.1"}}})
    assert probes["routes"] == {"node2": {"address": "127.0.0.1", "dev": "lo"}}
