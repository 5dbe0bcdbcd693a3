"""validate.run_plan: which runs the play makes, who launches them, where the report goes."""

from __future__ import annotations

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.common.tristate import TristateError
from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.run_plan import report_dir, run_plan

SETTINGS = {"multi_node": True, "gloo": "auto", "mpirun": "", "report_parent": "validate-reports",
            "cwd": "/work", "playbook_dir": "/work/playbooks"}
PROFILE = "/opt/ncclkit/bin/ncclkit-mpirun"


def plan(gpus, **settings):
    hosts = list(gpus)
    return run_plan(hosts, gpus, {host: PROFILE for host in hosts}, dict(SETTINGS, **settings))


def test_all_hosts_with_gpus_run_the_multi_node_run_and_no_gloo():
    got = plan({"n1": 8, "n2": 8})
    assert got == {"report_dir": "/work/validate-reports", "gpu_hosts": ["n1", "n2"], "expected_ranks": 16,
                   "launch_host": "n1", "launcher": PROFILE, "multi": True, "gloo": False, "gloo_host": "n1",
                   "note": ""}


def test_no_gpu_anywhere_runs_gloo_under_auto_and_nothing_of_nccl():
    got = plan({"n1": 0, "n2": 0})
    assert (got["multi"], got["gloo"], got["gpu_hosts"], got["launch_host"], got["expected_ranks"]) == \
        (False, True, [], "", 0)
    # Without a GPU host the first host's profile gives the launcher.
    assert got["launcher"] == PROFILE and got["note"] == ""


@pytest.mark.parametrize(("gloo", "runs"), [("true", True), ("required", True), (True, True), ("yes", True),
                                            ("false", False), ("disabled", False), ("off", False), ("auto", False)])
def test_gloo_on_gpu_hosts_only_when_asked_for(gloo, runs):
    assert plan({"n1": 1, "n2": 1}, gloo=gloo)["gloo"] is runs


def test_a_host_without_gpu_skips_the_multi_node_run_and_says_which():
    got = plan({"n1": 2, "n3": 0, "n2": 2, "n4": 0})
    assert got["multi"] is False and got["gpu_hosts"] == ["n1", "n2"] and got["expected_ranks"] == 4
    assert got["note"] == "multi-node run skipped: hosts without GPU (n3, n4) cannot join it"


def test_one_host_makes_no_multi_node_or_gloo_run():
    got = plan({"n1": 8}, gloo="true")
    assert (got["multi"], got["gloo"], got["note"]) == (False, False, "")


def test_multi_node_off_turns_off_both_cross_host_runs_and_the_note():
    got = plan({"n1": 2, "n2": 0}, multi_node=False, gloo="true")
    assert (got["multi"], got["gloo"], got["note"]) == (False, False, "")


def test_the_users_launcher_wins_over_the_profiles():
    assert plan({"n1": 1, "n2": 1}, mpirun="/usr/bin/mpirun")["launcher"] == "/usr/bin/mpirun"
    no_profile = run_plan(["n1", "n2"], {"n1": 1, "n2": 1}, {}, SETTINGS)
    assert no_profile["launcher"] == ""


def test_the_launcher_is_the_first_gpu_hosts():
    got = run_plan(["n0", "n1"], {"n0": 0, "n1": 1}, {"n0": "/a", "n1": "/b"}, SETTINGS)
    assert (got["launch_host"], got["launcher"]) == ("n1", "/b")


@pytest.mark.parametrize(("parent", "cwd", "expected"), [
    ("/srv/reports", "/work", "/srv/reports"),
    ("reports", "/work", "/work/reports"),
    ("reports", "", "/work/playbooks/reports"),
])
def test_report_dir(parent, cwd, expected):
    assert report_dir(parent, cwd, "/work/playbooks") == expected


def test_a_bad_gloo_word_names_the_variable():
    with pytest.raises(TristateError, match="nccl_validate_gloo is 'sometimes'"):
        plan({"n1": 1, "n2": 1}, gloo="sometimes")
