"""The nccl_profile role on a 2-node lab cluster (index 40), in the order a user meets it:
bad values refused before anything is written, `state: absent` and check mode on fresh nodes,
the first run, the
files and launch scripts per host, mpirun across the nodes over SSH, a second run that changes
nothing, the wrong-NIC hang and its fix (training_check.py), and `state: absent`.
Marked `lab` (root) and `slow`; the timings are recorded as test properties.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest

from .conftest import INDEX, REPO_ROOT, node_sh
from .training_check import start_training, wait_for_hang, wait_for_training

pytestmark = [pytest.mark.lab, pytest.mark.slow]

NODES = ("node1", "node2")
PUBLIC = {"node1": f"198.18.{INDEX}.11", "node2": f"198.18.{INDEX}.12"}
PRIVATE = {"node1": f"198.19.{INDEX}.11", "node2": f"198.19.{INDEX}.12"}
NETWORK = f"198.19.{INDEX}.0/24"
KEY = "/root/.ssh/ncclkit_cluster_ed25519"
WRITTEN = ["/etc/nccl.conf", "/etc/profile.d/ncclkit.sh", "/etc/ncclkit/nccl.env", "/etc/ncclkit/nccl.container.env",
           "/etc/ncclkit/nccl.json", "/etc/ncclkit/hostfile", "/opt/ncclkit/bin/ncclkit-env",
           "/opt/ncclkit/bin/ncclkit-torchrun", "/opt/ncclkit/bin/ncclkit-mpirun",
           "/etc/ssh/ssh_config.d/ncclkit.conf", "/etc/ncclkit/ssh_known_hosts", KEY, KEY + ".pub"]
EXAMPLE = REPO_ROOT / "examples" / "lightning_ddp_check.py"
# An image's own /etc/nccl.conf (node1) and an empty ssh_known_hosts ncclkit never wrote (node2).
FOREIGN_CONF = "NCCL_TOPO_FILE=/opt/image/topo.xml\n"
BLOCK_FILES = ["/root/.ssh/authorized_keys", "/etc/ssh/ssh_known_hosts"]


def existing(lab, node: str, paths=tuple(WRITTEN)) -> list[str]:
    script = "for p in " + " ".join(map(shlex.quote, paths)) + '; do [ ! -e "$p" ] || echo "$p"; done'
    done = node_sh(lab, node, script)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def marked_blocks(lab, node: str) -> str:
    """The role's marker lines in the files that exist (grep: 0 found, 1 none)."""
    done = node_sh(lab, node, "set --; for f in " + " ".join(BLOCK_FILES) + '; do [ ! -e "$f" ] || set -- "$@" "$f"; '
                              "done; [ $# -eq 0 ] || grep -h 'ncclkit cluster' \"$@\"")
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


def read(lab, node: str, path: str) -> str:
    done = node_sh(lab, node, f"cat {shlex.quote(path)}")
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def converged(run_profile, timings):
    run = run_profile()
    timings("first run s", round(run.seconds, 1))
    assert run.rc == 0, run.output[-4000:]
    return run


@pytest.fixture(scope="module")
def timings():
    """timings(name, seconds): printed at the end of the module (seen with pytest -s)."""
    measured = {}
    yield measured.__setitem__
    print("\nnccl_profile lab timings:", json.dumps(measured))


def test_bad_values_fail_before_anything_is_written(lab, run_profile, timings):
    run = run_profile(nccl_profile_tuning={"NCCL_SOCKET_NTHREADS": 32, "NCCL_ALGO": "Ringg"},
                      nccl_profile_extra_env={"NCCL_DEBUG_FILE": "relative.log"})
    timings("refused run s", round(run.seconds, 1))
    assert run.rc != 0
    assert "The NCCL profile of node1 is not usable" in run.output
    for cause in ("NCCL_SOCKET_NTHREADS (from nccl_profile_tuning) is '32': NCCL and PyTorch take a "
                  "whole number 1-16",
                  "'Ringg' is not an algorithm; NCCL 2.28 knows Tree, Ring",
                  "NCCL_DEBUG_FILE (from nccl_profile_extra_env) is 'relative.log': give an absolute path"):
        assert cause in run.output, run.output[-3000:]
    for node in NODES:
        assert existing(lab, node, WRITTEN + ["/etc/ncclkit", "/opt/ncclkit"]) == []


def test_absent_on_fresh_nodes_changes_nothing(lab, run_profile, timings):
    """Not even files the role could own but never wrote: an image's /etc/nccl.conf, an empty
    ssh_known_hosts."""
    assert node_sh(lab, "node1", f"printf %s {shlex.quote(FOREIGN_CONF)} > /etc/nccl.conf").returncode == 0
    assert node_sh(lab, "node2", ": > /etc/ssh/ssh_known_hosts").returncode == 0
    run = run_profile(nccl_profile_state="absent")
    timings("absent on fresh nodes s", round(run.seconds, 1))
    assert run.rc == 0 and run.changed() == {"node1": 0, "node2": 0}, run.output[-4000:]
    assert read(lab, "node1", "/etc/nccl.conf") == FOREIGN_CONF
    assert read(lab, "node2", "/etc/ssh/ssh_known_hosts") == ""


def test_check_mode_on_fresh_nodes_reports_changes_and_writes_nothing(lab, run_profile,
                                                                      timings):
    run = run_profile(check=True)
    timings("check mode run s", round(run.seconds, 1))
    assert run.rc == 0, run.output[-4000:]
    assert all(count > 0 for count in run.changed().values()), run.recap
    assert {host: facts["ncclkit_launch"]["node_rank"] for host, facts in run.facts.items()} == \
        {"node1": 0, "node2": 1}
    for node in NODES:
        assert existing(lab, node, WRITTEN + ["/etc/ncclkit", "/opt/ncclkit"]) == \
            (["/etc/nccl.conf"] if node == "node1" else [])
        assert marked_blocks(lab, node) == ""
    assert read(lab, "node1", "/etc/nccl.conf") == FOREIGN_CONF


def test_a_host_key_file_that_is_no_plain_key_stops_the_play_before_anything_is_written(lab, run_profile):
    """A CA line where a host key belongs (ssh-keyscan's output was pinned unchecked) is refused on
    every host, with the file named."""
    key = read(lab, "node2", "/etc/ssh/ssh_host_ed25519_key.pub").split()[1]
    planted = "/etc/ssh/ssh_host_planted_key.pub"
    assert node_sh(lab, "node2", f"echo '@cert-authority * ssh-ed25519 {key}' > {planted}").returncode == 0
    try:
        run = run_profile()
    finally:
        assert node_sh(lab, "node2", f"rm {planted}").returncode == 0
    assert run.rc != 0
    assert f"node2: {planted} starts with the known_hosts marker @cert-authority" in run.output, run.output[-3000:]
    for node in NODES:
        assert existing(lab, node, WRITTEN + ["/etc/ncclkit", "/opt/ncclkit"]) == \
            (["/etc/nccl.conf"] if node == "node1" else [])
        assert marked_blocks(lab, node) == ""


def test_present_keeps_the_nccl_conf_it_replaced_as_a_backup(lab, converged):
    backups = node_sh(lab, "node1", "cat /etc/nccl.conf.*~")
    assert backups.returncode == 0 and backups.stdout == FOREIGN_CONF, backups.stderr
    assert "Written by ncclkit.cluster.nccl_profile" in read(lab, "node1", "/etc/nccl.conf")


def test_each_host_gets_its_rank_the_one_master_and_its_nic(lab, converged):
    launch = {host: facts["ncclkit_launch"] for host, facts in converged.facts.items()}
    assert sorted(launch) == list(NODES)
    assert [launch[node]["node_rank"] for node in NODES] == [0, 1]
    assert {plan["master_addr"] for plan in launch.values()} == {PRIVATE["node1"]}
    for node in NODES:
        facts = converged.facts[node]
        assert facts["ncclkit_cluster_ip"] == PRIVATE[node]
        assert launch[node] | {"python": None} == {
            "nnodes": 2, "node_rank": NODES.index(node), "master_addr": PRIVATE["node1"],
            "master_port": 29500, "nproc_per_node": 1, "world_size": 2,
            "torchrun": "/opt/ncclkit/bin/ncclkit-torchrun", "mpirun": "/opt/ncclkit/bin/ncclkit-mpirun",
            "hostfile": "/etc/ncclkit/hostfile", "env": "/opt/ncclkit/bin/ncclkit-env", "python": None}
        assert facts["ncclkit_nccl_env"] == {
            "GLOO_SOCKET_IFNAME": facts["ncclkit_cluster_ifname"],
            "NCCL_DEBUG": "WARN",
            "NCCL_IB_DISABLE": "1",
            "NCCL_SOCKET_IFNAME": "=" + facts["ncclkit_cluster_ifname"],
            "OMPI_MCA_btl_tcp_if_include": NETWORK,
            "OMPI_MCA_oob_tcp_if_include": NETWORK,
            "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
            "TORCH_FR_DUMP_TEMP_FILE": "/var/tmp/ncclkit-flight-recorder/nccl_trace_rank_",
            "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": "/var/tmp/ncclkit-flight-recorder/nccl_trace_rank_",
            "TORCH_NCCL_DUMP_ON_TIMEOUT": "1",
            "TORCH_NCCL_TRACE_BUFFER_SIZE": "2000",
            "TP_SOCKET_IFNAME": facts["ncclkit_cluster_ifname"],
        }
        folder = node_sh(lab, node, "stat -c %a /var/tmp/ncclkit-flight-recorder")
        assert folder.stdout.strip() == "1777", folder.stderr


def test_every_way_a_job_starts_sees_the_same_profile(lab, converged):
    for node in NODES:
        env = converged.facts[node]["ncclkit_nccl_env"]
        files = node_sh(lab, node, "cat /etc/nccl.conf; echo ---; cat /etc/ncclkit/nccl.env; echo ---; "
                                   "cat /etc/ncclkit/nccl.json; echo ---; cat /etc/ncclkit/hostfile")
        conf, env_file, as_json, hostfile = files.stdout.split("---\n")
        # NCCL reads nccl.conf itself: its NCCL_* lines and comments without '='.
        assert dict(line.split("=", 1) for line in conf.splitlines() if not line.startswith("#")) == \
            {name: value for name, value in env.items() if name.startswith("NCCL_")}
        assert all("=" not in line for line in conf.splitlines() if line.startswith("#"))
        assert dict(line.split("=", 1) for line in env_file.splitlines() if not line.startswith("#")) == env
        assert json.loads(as_json) == env
        assert [line for line in hostfile.splitlines() if not line.startswith("#")] == \
            [f"{PRIVATE['node1']} slots=1", f"{PRIVATE['node2']} slots=1"]
        login = node_sh(lab, node, "exec bash -lc env")
        runner = node_sh(lab, node, "exec env -i /opt/ncclkit/bin/ncclkit-env /usr/bin/env")
        for output in (login.stdout, runner.stdout):
            assert {name: value for name, value in (line.split("=", 1) for line in output.splitlines()
                                                    if "=" in line) if name in env} == env


def test_ncclkit_env_keeps_what_the_environment_sets_and_says_so(lab, converged):
    done = node_sh(lab, "node1", "NCCL_DEBUG=INFO NCCL_IB_DISABLE=1 /opt/ncclkit/bin/ncclkit-env "
                                 "sh -c 'echo $NCCL_DEBUG $GLOO_SOCKET_IFNAME'")
    assert done.returncode == 0 and done.stdout.split() == ["INFO", "eth1"]
    assert done.stderr.strip() == "ncclkit-env: kept from the environment, not the profile: NCCL_DEBUG"
    off = node_sh(lab, "node1", "env -i NCCLKIT_PROFILE=off /opt/ncclkit/bin/ncclkit-env /usr/bin/env")
    assert off.returncode == 0 and "NCCLKIT_PROFILE=off" in off.stdout.split()
    assert not [line for line in off.stdout.split() if line.startswith(("NCCL_SOCKET", "GLOO", "OMPI"))]


def test_mpirun_runs_on_both_nodes_over_the_cluster_network_with_the_profile(lab, converged):
    done = node_sh(lab, "node1", "cd / && /opt/ncclkit/bin/ncclkit-mpirun "
                                 "sh -c 'echo $(hostname) $NCCL_SOCKET_IFNAME $OMPI_MCA_btl_tcp_if_include'")
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(done.stdout.splitlines()) == [f"node1 =eth1 {NETWORK}", f"node2 =eth1 {NETWORK}"]


def test_ssh_trust_takes_cluster_addresses_only_and_pins_host_keys(lab, converged):
    done = node_sh(lab, "node2", f"ssh -o BatchMode=yes {PRIVATE['node1']} hostname")
    assert (done.returncode, done.stdout.strip()) == (0, "node1"), done.stderr
    # The host keys each node's sshd serves, read from its own files, for its name and cluster address
    # (the lab's hostname is the inventory name), in a file of ours; the system's file is untouched.
    known = read(lab, "node1", "/etc/ncclkit/ssh_known_hosts")
    served = {node: " ".join(read(lab, node, "/etc/ssh/ssh_host_ed25519_key.pub").split()[:2]) for node in NODES}
    assert sorted(line for line in known.splitlines() if not line.startswith("#")) == [
        f"{node},{PRIVATE[node]} {served[node]}" for node in NODES]
    assert "ncclkit" not in node_sh(lab, "node1", "cat /etc/ssh/ssh_known_hosts 2>/dev/null").stdout
    ssh_config = read(lab, "node1", "/etc/ssh/ssh_config.d/ncclkit.conf")
    assert "GlobalKnownHostsFile /etc/ncclkit/ssh_known_hosts" in ssh_config
    # Every cluster key only from the cluster addresses, with no pty or forwarding.
    authorized = read(lab, "node1", "/root/.ssh/authorized_keys").splitlines()
    keys = [line for line in authorized if "ncclkit-cluster@" in line]
    assert len(keys) == 2 and all(line.startswith(f'from="{PRIVATE["node1"]},{PRIVATE["node2"]}",restrict ')
                                  for line in keys), keys
    # The outsider shares the cluster network but not the cluster: node2's key does not let it in.
    key = node_sh(lab, "node2", f"cat {KEY}").stdout
    outsider = lab.exec("outsider", ["sh", "-c", f"umask 077; cat > /tmp/k; ssh -i /tmp/k -o BatchMode=yes "
                                                 f"-o StrictHostKeyChecking=no {PRIVATE['node1']} hostname"],
                        input=key, capture_output=True, text=True, timeout=60)
    assert outsider.returncode == 255 and "Permission denied" in outsider.stderr, outsider.stderr


def test_a_second_run_changes_nothing(converged, run_profile, timings):
    run = run_profile()
    timings("second run s", round(run.seconds, 1))
    assert run.rc == 0, run.output[-4000:]
    assert run.changed() == {"node1": 0, "node2": 0}, run.output[-4000:]
    assert run.facts == converged.facts


@pytest.fixture(scope="module")
def training(lab, converged):
    """The nodes see this checkout and its virtualenv (PyTorch, Lightning) at the same paths, as
    nodes made from one image with a shared filesystem would (the lab overlays /tmp too)."""
    for node in NODES:
        seen = node_sh(lab, node, f"test -r {shlex.quote(str(EXAMPLE))} && test -x {shlex.quote(sys.executable)}")
        assert seen.returncode == 0, f"{node} does not see {EXAMPLE} and {sys.executable}"
    return lab


def test_without_the_profile_training_hangs_in_gloo_connect(training, timings, tmp_path):
    """The wrong-NIC failure: torchrun's rendezvous (on the master's cluster address) works, then
    Gloo binds the address the hostname resolves to (eth0) and connects to the peer's eth0, where
    the lab drops node-to-node traffic. Stopped as soon as that is seen and has lasted a while."""
    ranks = start_training(training, EXAMPLE, profile=False, extra_args=["--master-port", "29541"])
    hang = wait_for_hang(training, ranks, peers_public=PUBLIC, limit_s=60)
    timings("hang detected after s", round(hang.seconds, 1))
    assert hang.still_running, hang.describe()
    assert hang.pending_to and set(hang.pending_to) <= set(PUBLIC.values()), hang.describe()
    assert hang.started_ranks == {0, 1}, hang.describe()
    assert hang.ready_ranks == set() and not hang.finished, hang.describe()
    # From the logs alone (no NCCL line: it never got that far), the diagnosis names the hang.
    logs = []
    for node, text in hang.outputs.items():
        log = tmp_path / f"{node}.log"
        log.write_text(text)
        logs.append(str(log))
    done = subprocess.run([sys.executable, "-m", "ncclkit.cli", "diagnose", "--json", *logs],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")},
                          check=False)
    assert done.returncode == 1, done.stderr
    root = json.loads(done.stdout)["findings"][0]
    assert root["code"] == "hang_in_rendezvous", done.stdout
    assert "GLOO_SOCKET_IFNAME" in root["fix"] and "MASTER_ADDR" in root["fix"], root


def test_with_the_profile_training_completes_and_the_ranks_agree(training, timings):
    ranks = start_training(training, EXAMPLE, profile=True)
    result = wait_for_training(ranks, limit_s=180)
    timings("training run s", round(result.seconds, 1))
    assert result.return_codes == [0, 0], result.describe()
    assert sorted(result.reports) == [0, 1], result.describe()
    assert {report["sum"] for report in result.reports.values()} == {3.0}, result.describe()
    assert len({report["weights"] for report in result.reports.values()}) == 1, result.describe()


def test_secret_looking_values_make_the_env_files_root_only(lab, converged, run_profile):
    run = run_profile(nccl_profile_extra_env={"HF_TOKEN": "planted-token"})
    assert run.rc == 0, run.output[-4000:]
    modes = dict(line.split(" ", 1)[::-1] for line in node_sh(
        lab, "node1", "stat -c '%a %n' " + " ".join(WRITTEN[:9])).stdout.splitlines())
    assert modes == {"/etc/nccl.conf": "644", "/etc/profile.d/ncclkit.sh": "600", "/etc/ncclkit/nccl.env": "600",
                     "/etc/ncclkit/nccl.container.env": "600",
                     "/etc/ncclkit/nccl.json": "600", "/etc/ncclkit/hostfile": "644",
                     "/opt/ncclkit/bin/ncclkit-env": "700", "/opt/ncclkit/bin/ncclkit-torchrun": "755",
                     "/opt/ncclkit/bin/ncclkit-mpirun": "755"}
    holding = node_sh(lab, "node1", "grep -l planted-token " + " ".join(WRITTEN[:9])).stdout.split()
    assert holding and all(modes[path].endswith("00") for path in holding), (holding, modes)


def test_state_absent_removes_everything_the_role_wrote(lab, converged, run_profile, timings):
    run = run_profile(nccl_profile_state="absent")
    timings("absent run s", round(run.seconds, 1))
    assert run.rc == 0, run.output[-4000:]
    assert sorted(run.facts) == list(NODES)
    assert all(facts["ncclkit_nccl_env"] == {} for facts in run.facts.values())
    for node in NODES:
        assert existing(lab, node, WRITTEN + ["/etc/ncclkit", "/opt/ncclkit"]) == []
        assert marked_blocks(lab, node) == ""
    # authorized_keys held only the role's block, so it went too; node2's empty ssh_known_hosts was
    # never the role's (it pins host keys in /etc/ncclkit/ssh_known_hosts) and stays.
    assert existing(lab, "node1", BLOCK_FILES) == []
    assert existing(lab, "node2", BLOCK_FILES) == ["/etc/ssh/ssh_known_hosts"]
    # The image's file the first run replaced is still there to restore.
    assert node_sh(lab, "node1", "cat /etc/nccl.conf.*~").stdout == FOREIGN_CONF
