"""`ncclkit check`'s decisions (module_utils.check_findings) and host readings (check.host)."""

from ansible_collections.ncclkit.cluster.plugins.module_utils.check import findings as cf
from ansible_collections.ncclkit.cluster.plugins.module_utils.check import host as ch
from conftest import SAMPLES

PROFILE_ENV = "GLOO_SOCKET_IFNAME=eth1\nNCCL_SOCKET_IFNAME==eth1\n"
# As ncclkit-env.j2 renders a variable.
ENV_RUNNER = ("  if [ -z \"${GLOO_SOCKET_IFNAME+set}\" ]; then export GLOO_SOCKET_IFNAME=eth1\n"
              "  if [ -z \"${NCCL_SOCKET_IFNAME+set}\" ]; then export NCCL_SOCKET_IFNAME='=eth1'\n")


def profile_files(env=PROFILE_ENV, runner=ENV_RUNNER):
    files = {"/etc/nccl.conf": "NCCL_SOCKET_IFNAME==eth1\n",
             "/etc/profile.d/ncclkit.sh": "export GLOO_SOCKET_IFNAME='eth1'\nexport NCCL_SOCKET_IFNAME='=eth1'\n",
             "/etc/ncclkit/nccl.env": env, "/opt/ncclkit/bin/ncclkit-env": runner,
             ch.TORCHRUN: "  --master-addr 198.19.150.11 --master-port 29500 \\\n"}
    return files.get


def host(name, ip, resolved, read=lambda path: None, probes=None, **extra):
    view = {"hostname": name, "resolved": resolved, "start_paths": ch.start_paths(read),
            "profile_master": ch.profile_master(read), "shm_bytes": 8 << 30, "memlock_kib": 64,
            "kernel_log": {"readable": True, "xid": [], "ecc": []}, "nvidia_peermem": False,
            "topology": {}, "cluster_ip": ip, "cluster_ifname": "eth1", "gpu_count": 0,
            "transport": "socket", "nccl_version": "2.21.5", "driver_version": "", "torch_version": "2.5.1",
            "probes": probes or {"hostname": {}, "master": None}}
    view.update(extra)
    return view


def lab(read=lambda path: None, **extra):
    """Two lab nodes whose host names resolve to the public eth0 addresses nobody else reaches."""
    return {"node1": host("node1", "198.19.150.11", ["198.18.150.11"], read,
                          {"hostname": {"node2": False}, "master": None}, **extra),
            "node2": host("node2", "198.19.150.12", ["198.18.150.12"], read,
                          {"hostname": {"node1": False}, "master": "refused"}, **extra)}


def codes(result, severity=None):
    return [f["code"] for f in result["findings"] if severity in (None, f["severity"])]


def test_fresh_lab_predicts_the_rendezvous_hang():
    hosts = lab()
    result = cf.judge(hosts, cf.choose_master({}, "198.19.150.11", 29500))
    assert not result["ready"]
    assert set(codes(result, "error")) == {"hostname_unreachable", "gloo_unpinned", "nccl_unpinned"}
    first = result["findings"][0]
    assert first["code"] == "hostname_unreachable" and first["host"] == "node1"
    assert "GLOO_SOCKET_IFNAME=eth1" in first["fix"] and "198.18.150.11" in first["cause"]
    assert result["verdicts"]["node2"].startswith("node2: NOT READY")


def test_profile_written_everywhere_is_ready():
    result = cf.judge(lab(profile_files()), cf.choose_master(ch.profile_master(profile_files()), "x", 1))
    assert result["ready"], result["findings"]
    assert codes(result) == ["hostname_unreachable", "hostname_unreachable"]   # warnings only
    assert result["master"]["addr"] == "198.19.150.11" and result["master"]["source"].startswith("the profile")
    assert result["master"]["host"] == "node1"   # the host whose cluster address it is
    off = cf.judge(lab(profile_files()), cf.choose_master({}, "198.18.150.11", 29500))
    assert off["master"]["host"] is None          # a public address is no host's cluster address


def test_one_start_path_missing_gloo_is_a_warning_naming_it():
    read = profile_files(env="NCCL_SOCKET_IFNAME==eth1\n")
    result = cf.judge(lab(read), cf.choose_master({}, "198.19.150.11", 29500))
    gloo = [f for f in result["findings"] if f["code"] == "gloo_unpinned"]
    assert gloo and gloo[0]["severity"] == "warning" and "/etc/ncclkit/nccl.env" in gloo[0]["cause"]
    # That path unpinned, an unreachable host name is an error again: Gloo may bind there.
    assert "hostname_unreachable" in codes(result, "error")


def test_wrong_interface_is_an_error():
    read = profile_files(env="GLOO_SOCKET_IFNAME=eth0\nNCCL_SOCKET_IFNAME==eth1\n")
    result = cf.judge(lab(read), {"addr": "198.19.150.11", "port": 29500})
    wrong = [f for f in result["findings"] if f["code"] == "socket_ifname_wrong"]
    assert wrong and "eth0" in wrong[0]["cause"] and wrong[0]["severity"] == "error"


def test_master_off_cluster_and_blocked_port():
    hosts = lab(profile_files())
    hosts["node2"]["probes"]["master"] = "timeout"
    result = cf.judge(hosts, {"addr": "198.18.150.11", "port": 29500, "source": "test"})
    assert {"master_off_cluster", "master_port_blocked"} <= set(codes(result, "error"))


def test_versions_shm_memlock_and_gpu_health():
    hosts = lab(profile_files())
    hosts["node2"].update(nccl_version="2.18.1", shm_bytes=64 << 20, gpu_count=8, transport="ib",
                          kernel_log={"readable": True, "ecc": [],
                                      "xid": ["NVRM: Xid (PCI:0000:1b:00): 79, pid=123, GPU has fallen off the bus."]})
    result = cf.judge(hosts, {"addr": "198.19.150.11", "port": 29500})
    found = {(f["code"], f["host"]) for f in result["findings"] if f["severity"] == "error"}
    assert {("version_mismatch", None), ("shm_small", "node2"), ("memlock_low", "node2"),
            ("gpu_xid", "node2")} <= found
    assert ("gpudirect_rdma_off", "node2") in {(f["code"], f["host"]) for f in result["findings"]}


def test_loopback_hostname():
    hosts = lab()
    hosts["node1"]["resolved"] = ["127.0.1.1"]
    assert "hostname_loopback" in codes(cf.judge(hosts, {}), "error")


def test_one_host_has_no_rendezvous_findings():
    hosts = {"node1": lab()["node1"]}
    hosts["node1"]["probes"] = {"hostname": {}, "master": None}
    assert cf.judge(hosts, {})["ready"]


def test_assignments_read_every_start_path_form():
    assert ch.assignments(ENV_RUNNER) == {"GLOO_SOCKET_IFNAME": "eth1", "NCCL_SOCKET_IFNAME": "=eth1"}
    found = ch.assignments("# GLOO_SOCKET_IFNAME=eth0\nexport GLOO_SOCKET_IFNAME='eth1'\n")
    assert found == {"GLOO_SOCKET_IFNAME": "eth1"}


def test_topology_from_a_real_matrix_and_far_nics():
    text = (SAMPLES / "check" / "topo_m_8gpu_9nic.txt").read_text().split("\n", 1)[1]
    topo = ch.parse_topo(text)
    assert topo["gpus"]["GPU0"]["NIC2"] == "PIX" and topo["gpus"]["GPU4"]["NIC1"] == "PIX"
    assert len(topo["gpus"]["GPU1"]) == 9
    far = {"gpus": {gpu: {nic: "SYS" for nic in nics} for gpu, nics in topo["gpus"].items()}}
    hosts = lab(profile_files(), gpu_count=8, transport="ib", nvidia_peermem=True, memlock_kib=None)
    assert "gpu_nic_far" not in codes(cf.judge(hosts, {}))
    hosts["node1"]["topology"] = far
    assert "gpu_nic_far" in codes(cf.judge(hosts, {}))


def test_kernel_log_unreadable_and_ecc():
    def command(argv, timeout):
        return (1, "", "dmesg: read kernel buffer failed: Operation not permitted") if argv[0] == "dmesg" \
            else (0, "kernel: NVRM: Xid (PCI:0000:3b:00): 48, pid=1, DBE (double bit error) ECC error\n", "")
    log = ch.kernel_log(command)
    assert log["source"] == "journalctl" and log["xid"] and log["ecc"]
    log = ch.kernel_log(lambda argv, timeout: (1, "", "not permitted"))
    assert not log["readable"] and log["error"] == "not permitted"


def test_a_stale_process_on_the_masters_rendezvous_port_is_an_error_naming_it():
    hosts = lab(profile_files())
    hosts["node1"]["probes"]["master_holder"] = "python3 train.py (pid 4242)"
    hosts["node2"]["probes"]["master"] = "open"
    result = cf.judge(hosts, {"addr": "198.19.150.11", "port": 29500, "source": "test"})
    stale = [f for f in result["findings"] if f["code"] == "master_port_in_use"]
    assert len(stale) == 1 and stale[0]["severity"] == "error" and stale[0]["host"] == "node1"
    assert "pid 4242" in stale[0]["cause"] and "29500" in stale[0]["cause"] and "--master-port" in stale[0]["fix"]
    assert not result["ready"]
    hosts["node1"]["probes"]["master_holder"] = None
    assert "master_port_in_use" not in codes(cf.judge(hosts, {"addr": "198.19.150.11", "port": 29500}))


def test_gpudirect_on_efa_is_efa_s_own_module_not_nvidia_peermem():
    def found(**extra):
        hosts = lab(profile_files(), gpu_count=8, memlock_kib=None, **extra)
        return {(f["code"], f["severity"]) for f in cf.judge(hosts, {})["findings"] if f["host"] == "node2"}

    # nvidia_peermem loaded on an EFA host (p4d, p5) says nothing of EFA: no warning that GDR is off.
    efa = found(transport="efa", nvidia_peermem=True, efa_nv_peermem=False)
    assert ("gpudirect_rdma_unconfirmed", "info") in efa and not any(code == "gpudirect_rdma_off" for code, dummy in efa)
    assert not any(code.startswith("gpudirect") for code, dummy in found(transport="efa", efa_nv_peermem=True))
    # InfiniBand keeps its rule.
    assert ("gpudirect_rdma_off", "warning") in found(transport="ib", nvidia_peermem=False)
    assert not any(code.startswith("gpudirect") for code, dummy in found(transport="ib", nvidia_peermem=True))


def test_a_path_that_drops_frames_of_the_nic_s_mtu_is_an_error_on_the_host_that_sent_them():
    hosts = lab(profile_files())
    hosts["node1"]["probes"]["path"] = {
        "node2": {"address": "198.19.150.12", "mtu": 9000, "small": True, "large": False}}
    hosts["node2"]["probes"]["path"] = {
        "node1": {"address": "198.19.150.11", "mtu": 9000, "small": False, "large": False},   # unreachable
        "node3": {"address": "198.19.150.13", "mtu": 9000, "small": True, "large": None}}     # not asked
    result = cf.judge(hosts, cf.choose_master(ch.profile_master(profile_files()), "x", 1))
    blocked = [f for f in result["findings"] if f["code"] == "path_mtu"]
    assert [(f["host"], f["severity"]) for f in blocked] == [("node1", "error")] and not result["ready"]
    assert "MTU 9000" in blocked[0]["cause"] and "node2" in blocked[0]["cause"]
    assert blocked[0]["evidence"] == ["from node1: ping -M do -s 8972 198.19.150.12 (node2): no reply; "
                                      "a small ping: a reply"]


def test_the_path_targets_are_the_ring_neighbours_cluster_addresses_with_the_host_s_mtu():
    nics = {"node1": {"cluster_ip": "10.0.0.1", "mtu": 9000}, "node2": {"cluster_ip": "10.0.0.2", "mtu": None},
            "node3": {"cluster_ip": "", "mtu": 1500}}
    plan = {"node1": ["node2", "node3"], "node2": ["node1"], "node3": ["node1"]}
    assert cf.path_targets(nics, plan) == {"node1": {"mtu": 9000, "peers": {"node2": "10.0.0.2"}, "ports": {}},
                                           "node2": {"mtu": 0, "peers": {"node1": "10.0.0.1"}, "ports": {}},
                                           "node3": {"mtu": 1500, "peers": {"node1": "10.0.0.1"}, "ports": {}}}


def test_each_peer_gets_two_ports_inside_its_own_ephemeral_range():
    nics = {"node1": {"cluster_ip": "10.0.0.1", "mtu": 1500, "port_range": [32768, 60999]},
            "node2": {"cluster_ip": "10.0.0.2", "mtu": 1500, "port_range": [40000, 40999]},
            "node3": {"cluster_ip": "10.0.0.3", "mtu": 1500, "port_range": "unreadable"}}
    plan = {"node1": ["node2", "node3"], "node2": ["node1"], "node3": ["node1"]}
    targets = cf.path_targets(nics, plan)
    assert targets["node1"]["ports"] == {"node2": [40333, 40666]}   # none for node3: its range is unknown
    assert targets["node2"]["ports"] == {"node1": [42178, 51588]}
    assert cf.ephemeral_ports([]) == [] and cf.ephemeral_ports([5, 5]) == [] and cf.ephemeral_ports([1, 70000]) == []


def ports_probe(hosts, prober, target, outcomes, small=True):
    hosts[prober]["probes"].setdefault("ports", {})[target] = dict(zip(("40333", "40666"), outcomes))
    hosts[prober]["probes"].setdefault("path", {})[target] = {"address": "x", "mtu": 1500, "small": small, "large": True}


def three_nodes():
    hosts = lab(profile_files())
    hosts["node3"] = host("node3", "198.19.150.13", ["198.18.150.13"], profile_files(), {"hostname": {}, "master": "open"})
    for name in hosts:
        hosts[name]["probes"]["hostname"] = {}
    return hosts


def test_ports_dropped_on_one_host_name_that_host_and_its_probers():
    hosts = three_nodes()
    ports_probe(hosts, "node1", "node2", ["timeout", "timeout"])
    ports_probe(hosts, "node3", "node2", ["timeout", "timeout"])
    ports_probe(hosts, "node2", "node1", ["refused", "refused"])   # its own connections get out and back
    ports_probe(hosts, "node2", "node3", ["refused", "open"])
    result = cf.judge(hosts, cf.choose_master(ch.profile_master(profile_files()), "x", 1))
    blocked = [f for f in result["findings"] if f["code"] == "peer_ports_blocked"]
    assert [(f["host"], f["severity"]) for f in blocked] == [("node2", "error")] and not result["ready"]
    assert "node1, node3" in blocked[0]["cause"] and "dropped" in blocked[0]["cause"]
    assert "TCP connect from node1 to node2 port 40333: timeout" in blocked[0]["evidence"]


def test_a_rejecting_host_is_named_when_two_nodes_fail_both_ways():
    # node2 rejects (ICMP) inbound to its range, its own connections' replies included: node1 sees a
    # reject, node2 a timeout. node2 is the one named, not node1.
    hosts = lab(profile_files())
    ports_probe(hosts, "node1", "node2", ["unreachable", "unreachable"])
    ports_probe(hosts, "node2", "node1", ["timeout", "timeout"])
    blocked = [f for f in cf.judge(hosts, cf.choose_master({}, "198.19.150.11", 29500))["findings"]
               if f["code"] == "peer_ports_blocked"]
    assert [f["host"] for f in blocked] == ["node2"] and "rejected" in blocked[0]["cause"]


def test_open_or_refused_ports_and_an_unreached_host_are_no_port_finding():
    hosts = lab(profile_files())
    ports_probe(hosts, "node1", "node2", ["refused", "open"])
    ports_probe(hosts, "node2", "node1", ["timeout", "timeout"], small=False)   # down: the ping findings' to name
    result = cf.judge(hosts, cf.choose_master(ch.profile_master(profile_files()), "x", 1))
    assert "peer_ports_blocked" not in codes(result) and result["ready"], result["findings"]


def test_a_route_to_a_neighbour_that_leaves_by_another_nic_is_that_host_s_error():
    hosts = three_nodes()
    hosts["node1"]["probes"]["routes"] = {"node2": {"address": "198.19.150.12", "dev": "eth1"},
                                          "node3": {"address": "198.19.150.13", "dev": "eth0"}}
    hosts["node3"]["probes"]["routes"] = {"node1": {"address": "198.19.150.11", "dev": "eth1"},
                                          "node2": {"address": "198.19.150.12", "dev": None}}   # no `ip`: unknown
    result = cf.judge(hosts, cf.choose_master(ch.profile_master(profile_files()), "x", 1))
    routed = [f for f in result["findings"] if f["code"] == "route_off_cluster"]
    assert [(f["host"], f["severity"]) for f in routed] == [("node1", "error")] and not result["ready"]
    assert "node3 (198.19.150.13) leaves by eth0" in routed[0]["cause"] and "cluster NIC eth1" in routed[0]["cause"]
    assert routed[0]["evidence"] == ["node1: ip route get 198.19.150.13: dev eth0"]
