"""The finding codes are an interface: every code the engine can emit is documented in
docs/diagnosis.md, and docs/cli.md has the exit-code table for every subcommand."""

import re

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.log import read_nccl_log_files
from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.root_cause import ROOT_CODES
from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.rules import PRIORITY, RULES
from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests import output as nccl_tests_output
from conftest import REPO_ROOT, SAMPLES
from ncclkit import cli, exitcodes

DIAGNOSIS = (REPO_ROOT / "docs" / "diagnosis.md").read_text()
CLI = (REPO_ROOT / "docs" / "cli.md").read_text()
DOCUMENTED = set(re.findall(r"^\| `([a-z_0-9]+)` \|", DIAGNOSIS, re.M))
GATES = set(re.findall(r'_gate\("([a-z_]+)"', (REPO_ROOT / "plugins" / "module_utils" / "nccl_tests" / "output.py")
                       .read_text()))


def test_every_code_in_the_tables_is_known():
    known = {rule.code for rule in RULES} | set(PRIORITY) | set(ROOT_CODES) | GATES
    assert DOCUMENTED == known, (DOCUMENTED - known, known - DOCUMENTED)


def test_every_code_emitted_on_the_samples_is_documented():
    emitted = set()
    for path in sorted(SAMPLES.glob("*")):
        if path.suffix in (".txt", ".log", ".json") and "nccl_tests-role-stamp" not in path.name:
            try:
                emitted |= {f["code"] for f in read_nccl_log_files([path])["findings"]}
            except ValueError:
                pass  # reports and JSON results are not logs
    assert emitted <= DOCUMENTED, emitted - DOCUMENTED
    assert {"rank_killed", "rank_failed", "hang_in_collective", "hang_in_rendezvous"} <= emitted


def test_gate_names_are_the_gates_nccl_perf_returns():
    run = nccl_tests_output.parse((SAMPLES / "h200-stuck-arp_kill.log").read_text())[0]
    names = {g["name"] for g in nccl_tests_output.evaluate_gates(run, require_complete=False, min_busbw_gbps=1,
                                                                 expected_ranks=3)["gates"]}
    assert names <= GATES and "no_error_lines" in names


def subcommands():
    parser = cli.build_parser()
    return sorted(parser._subparsers._group_actions[0].choices)


def test_the_exit_code_table_covers_every_subcommand_and_code():
    table = CLI[CLI.index("## Exit codes"):]
    header = next(line for line in table.splitlines() if line.startswith("| code |"))
    columns = [cell.strip() for cell in header.strip("|").split("|")]
    assert set(subcommands()) <= set(columns), set(subcommands()) - set(columns)
    rows = {int(line.split("|")[1]) for line in table.splitlines() if re.match(r"^\| \d+ \|", line)}
    codes = {value for name, value in vars(exitcodes).items() if name.isupper()}
    assert rows == codes


@pytest.mark.parametrize("name", subcommands())
def test_every_subcommand_is_listed(name):
    assert f"`ncclkit {name}" in CLI
