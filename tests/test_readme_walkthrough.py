"""The README's first-real-cluster walkthrough stays runnable: its inventory is one Ansible reads,
with the group the plays run on, and every variable it sets is one the collection reads."""

import re
import subprocess
import sys
from pathlib import Path

import yaml

from conftest import REPO_ROOT
from ncclkit.cli import build_parser

README = (REPO_ROOT / "README.md").read_text()
SECTION = README.split("## First real cluster", 1)[1].split("\n## ", 1)[0]


def _inventory_text():
    block = re.search(r"^   ```yaml\n(.*?)^   ```", SECTION, flags=re.MULTILINE | re.DOTALL).group(1)
    return "\n".join(line[3:] for line in block.splitlines())


def _role_defaults():
    names = set()
    for path in (REPO_ROOT / "roles").glob("*/defaults/main.yml"):
        names |= set(yaml.safe_load(path.read_text()) or {})
    return names


def test_the_inventory_has_the_cluster_group_with_two_reachable_hosts():
    inventory = yaml.safe_load(_inventory_text())
    hosts = inventory["cluster"]["hosts"]
    assert len(hosts) == 2 and all(host.get("ansible_host") for host in hosts.values())
    assert inventory["cluster"]["vars"]["ansible_user"]


def test_every_variable_of_the_inventory_is_one_the_collection_reads():
    variables = yaml.safe_load(_inventory_text())["cluster"]["vars"]
    known = _role_defaults() | {"ncclkit_cloud"}
    unknown = [name for name in variables if not name.startswith("ansible_") and name not in known]
    assert not unknown, f"the README's inventory sets variables no role reads: {unknown}"


def test_ansible_reads_the_inventory(tmp_path):
    (tmp_path / "hosts.yml").write_text(_inventory_text())
    done = subprocess.run([str(Path(sys.executable).parent / "ansible-inventory"), "-i", str(tmp_path / "hosts.yml"),
                           "--graph", "cluster"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "gpu1" in done.stdout and "gpu2" in done.stdout


def test_the_ncclkit_commands_of_the_walkthrough_exist():
    used = set(re.findall(r"^\s*(?:\$ )?ncclkit ([a-z]+)", SECTION, flags=re.MULTILINE))
    assert used >= {"check", "diagnose"}
    subcommands = build_parser()._subparsers._group_actions[0].choices
    assert used <= set(subcommands), used - set(subcommands)
