"""nccl_network against bad input on a 2-node lab (index 170): a refused firewall source leaves the
hosts exactly as they were, and a conflicting /etc/sysctl.conf line is named before anything is
written. Each node's /etc is its own overlay, so the lines written here never reach the machine's
/etc/sysctl.conf (the test checks that too). `sysctl --system --dry-run` shows, without writing
anything, what a boot would apply."""

from __future__ import annotations

import hashlib
from contextlib import ExitStack
from pathlib import Path

import pytest
from lab_helpers import needs_root
from lab_indices import lab_index
from network_helpers import lab_with_outsider, play, sh

pytestmark = [pytest.mark.lab, needs_root]

INDEX = lab_index(__file__)
NODES = ("node1", "node2")
KEY = "net.ipv4.ip_local_port_range"
OURS = "/etc/sysctl.d/99-zz-ncclkit-nccl.conf"
OLD = "/etc/sysctl.d/60-ncclkit-nccl.conf"
# Everything nccl_network may change on a host, read back whole.
SNAPSHOT = ("nft list ruleset; for d in /etc/ncclkit /etc/sysctl.d /etc/systemd/system; do echo \"== $d\"; "
            "ls -A \"$d\" 2>&1; done; cat /etc/sysctl.d/*.conf 2>&1; sysctl -n " + KEY)
# The live range before the play: the sysctl step would change it.
START_RANGE = "40000 50000"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    folder = tmp_path_factory.mktemp(f"lab{INDEX}")
    # ExitStack, not `with` on the generator-based context manager: pylint's cleanup check.
    with ExitStack() as stack:
        setups = dict.fromkeys(NODES, f"sysctl -qw {KEY}='{START_RANGE}'")
        yield stack.enter_context(lab_with_outsider(INDEX, 2, folder, setups))


def machine_sysctl_conf() -> str:
    path = Path("/etc/sysctl.conf")
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else "absent"


def boot_value(lab, node) -> str:
    """The value a boot would leave: the last one `sysctl --system` applies (dry run: nothing written)."""
    lines = [line for line in sh(lab, node, "sysctl --system --dry-run 2>/dev/null").splitlines()
             if line.startswith(KEY + " = ")]
    return " ".join(lines[-1].split("=", 1)[1].split()) if lines else ""


def test_refused_sources_and_names_leave_the_hosts_unchanged(lab):
    before = {node: sh(lab, node, SNAPSHOT) for node in NODES}
    result = play(lab.inventory, variables={
        "nccl_network_sources": [f"198.19.{INDEX}.0/0", "fd00::11"],
        "nccl_network_nftables_chains": ["inet filter input;touch /tmp/ncclkit-pwned"]})
    assert result.rc != 0
    outcome = result.task("Check the network variables, the sources and names that reach the firewall, and SSH's port")
    for node in NODES:
        message = outcome[node]["msg"]
        assert "source '198.19.170.0/0' has host bits set" in message and "0.0.0.0/0" in message
        assert "source 'fd00::11' is IPv6" in message
        assert "nccl_network_nftables_chains is 'inet filter input;touch /tmp/ncclkit-pwned'" in message
        assert sh(lab, node, SNAPSHOT) == before[node]
        assert sh(lab, node, "ls /tmp/ncclkit-pwned 2>&1 || true").strip().endswith("No such file or directory")
    assert "cannot access '/etc/ncclkit'" in before["node1"] and "table inet ncclkit" not in before["node1"]
    assert START_RANGE.replace(" ", "\t") in before["node1"]


def test_a_conflicting_sysctl_conf_line_is_named_and_nothing_written(lab):
    machine = machine_sysctl_conf()
    sh(lab, "node1", f"printf '# the site\\nvm.swappiness = 10\\n{KEY} = 1024 65000\\n' >> /etc/sysctl.conf")
    # node2 carries the file an earlier ncclkit wrote under the old name, and a file of the user's.
    sh(lab, "node2", f"printf '{KEY}=32768 60999\\n' > {OLD}"
                     " && printf 'vm.swappiness = 10\\n' > /etc/sysctl.d/60-user.conf")
    assert machine_sysctl_conf() == machine
    lines = sh(lab, "node1", "cat /etc/sysctl.conf").splitlines()
    result = play(lab.inventory, "--tags", "nccl_preflight,nccl_network_sysctl")
    assert result.rc != 0
    outcome = result.task("Pin net.ipv4.ip_local_port_range to NCCL's range (or remove ncclkit's sysctl file)")
    message = outcome["node1"]["msg"]
    assert f"/etc/sysctl.conf line {len(lines)}: {KEY} = 1024 65000" in message
    assert "set nccl_network_port_range to [1024, 65000]" in message and "Nothing was changed" in message
    assert sh(lab, "node1", f"ls {OURS} 2>/dev/null || true") == ""
    assert sh(lab, "node1", f"sysctl -n {KEY}").split() == START_RANGE.split()
    # What a boot would do on node1 is what the message says: /etc/sysctl.conf's value wins.
    assert boot_value(lab, "node1") == "1024 65000"

    assert not outcome["node2"].get("failed") and outcome["node2"]["removed"] == [OLD]
    assert sh(lab, "node2", f"ls {OLD} 2>/dev/null || true") == ""
    assert "60-user.conf" in sh(lab, "node2", "ls /etc/sysctl.d")
    assert sh(lab, "node2", f"sysctl -n {KEY}").split() == ["32768", "60999"]
    assert boot_value(lab, "node2") == "32768 60999"
    assert machine_sysctl_conf() == machine
