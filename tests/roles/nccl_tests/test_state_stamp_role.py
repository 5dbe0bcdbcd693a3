"""nccl_tests with its state stamp (tasks/converge.yml), against stand-ins (connection local): a
converged host skips the build's tasks in one step with ncclkit_nccl_tests restored as a run that
built nothing reports it; a file changed by hand (the "current" link removed) is repaired on the
next run, which reports changed; other inputs build again; a controller-side source is never
taken as unchanged (no stamp)."""

from __future__ import annotations

import json
import stat

from .conftest import host_vars, make_calls, run_role, write_inventory

BUILD_TASK = "Install | Look for the build tools"


def _install_dir(root, host):
    return root / host / "opt" / "ncclkit" / "nccl-tests"


def test_a_converged_host_skips_the_build_and_a_hand_change_is_repaired(toolchain, tmp_path):
    host = "stamped"
    inventory = write_inventory(tmp_path / "inventory.json", {host: host_vars(toolchain, tmp_path, host)})
    target = _install_dir(tmp_path, host)
    first = run_role(inventory)
    assert first.counts(host)["failed"] == 0 and first.counts(host)["changed"] > 0, first.output[-4000:]
    assert BUILD_TASK in first.output
    stamp = target / "ncclkit-nccl-tests-state.json"
    assert stat.S_IMODE(stamp.stat().st_mode) == 0o600
    assert json.loads(stamp.read_text())["facts"]["ncclkit_nccl_tests"]["built"] is False

    second = run_role(inventory)
    assert second.counts(host) == {**second.counts(host), "changed": 0, "failed": 0}, second.output[-4000:]
    assert BUILD_TASK not in second.output   # skipped in one step
    assert second.counts(host)["ok"] + second.counts(host)["skipped"] < \
        first.counts(host)["ok"] + first.counts(host)["skipped"] - 10
    restored = second.facts[host]["ncclkit_nccl_tests"]
    assert restored == {**first.facts[host]["ncclkit_nccl_tests"], "built": False}

    checked = run_role(inventory, check=True)
    assert checked.counts(host)["changed"] == 0 and BUILD_TASK not in checked.output

    (target / "current").unlink()          # changed by hand
    third = run_role(inventory)
    assert third.counts(host)["failed"] == 0 and third.counts(host)["changed"] > 0, third.output[-4000:]
    assert BUILD_TASK in third.output
    assert (target / "current" / "bin" / "all_reduce_perf").is_file()   # repaired
    assert len(make_calls(tmp_path, host)) == 1                         # from the build in place

    # Another input (a make variable) is not the stamp's: the role runs and builds again.
    changed = host_vars(toolchain, tmp_path, host)
    changed["nccl_tests_make_vars"] = changed["nccl_tests_make_vars"] + ["EXTRA_FLAG=1"]
    fourth = run_role(write_inventory(tmp_path / "changed.json", {host: changed}))
    assert fourth.counts(host)["failed"] == 0 and BUILD_TASK in fourth.output, fourth.output[-4000:]
    assert len(make_calls(tmp_path, host)) == 2


def test_a_controller_side_source_is_never_stamped(toolchain, tmp_path):
    host = "from_controller"
    variables = host_vars(toolchain, tmp_path, host, nccl_tests_source="controller",
                          nccl_tests_controller_path=str(toolchain.tree_v2196))
    inventory = write_inventory(tmp_path / "inventory.json", {host: variables})
    for dummy in range(2):
        run = run_role(inventory)
        assert run.counts(host)["failed"] == 0 and BUILD_TASK in run.output, run.output[-4000:]
    assert not (_install_dir(tmp_path, host) / "ncclkit-nccl-tests-state.json").exists()
