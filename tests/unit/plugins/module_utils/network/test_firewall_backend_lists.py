"""The firewall backends are named once, in network.firewall.backends.BACKENDS (and the ones whose rules
ncclkit saves for boot in network.firewall.backends.FILES); the YAML and docs that must repeat them are
checked against it here."""

from __future__ import annotations

import re

import yaml

from ansible_collections.ncclkit.cluster.plugins.module_utils.network.firewall import backends as firewall_backends
from ansible_collections.ncclkit.cluster.plugins.modules import nccl_firewall
from conftest import REPO_ROOT

BACKENDS = list(firewall_backends.BACKENDS)
ROLE = REPO_ROOT / "roles" / "nccl_network"


def test_the_module_documents_the_backends_it_accepts():
    assert yaml.safe_load(nccl_firewall.DOCUMENTATION)["options"]["backend"]["choices"] == BACKENDS


def test_the_role_accepts_the_same_backends():
    specs = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())
    assert specs["argument_specs"]["main"]["options"]["nccl_network_firewall"]["choices"] == BACKENDS
    # The argument spec is the role's only list of them (no assert repeats it).
    assert "_nccl_network_backends" not in yaml.safe_load((ROLE / "vars" / "main.yml").read_text())


def test_restore_at_boot_covers_the_backends_with_saved_rules():
    restore = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())["_nccl_network_restore_at_boot"]
    listed = re.search(r"backend \| default\('none'\) in \[([^\]]*)\]", restore).group(1)
    assert sorted(re.findall(r"'(\w+)'", listed)) == sorted(firewall_backends.FILES)


def test_the_docs_table_lists_the_backends():
    row = next(line for line in (REPO_ROOT / "docs" / "network.md").read_text().splitlines()
               if line.startswith("| `nccl_network_firewall` |"))
    assert re.findall(r"`(\w+)`", row.split("|")[3]) == BACKENDS
