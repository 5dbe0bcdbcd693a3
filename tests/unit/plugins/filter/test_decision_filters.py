"""The filters that took decisions out of the roles' Jinja: they read hostvars as the roles pass
them, and turn the module_utils' errors into Ansible's one-line errors."""

import pytest

PROFILE = "/opt/ncclkit/bin/ncclkit-mpirun"
SETTINGS = {"multi_node": True, "gloo": "auto", "mpirun": "", "report_parent": "reports", "cwd": "/work",
            "playbook_dir": "/work/pb"}


@pytest.fixture(scope="module")
def filters():
    """Imported here, not at collection, for the reason tests/unit/plugins/filter/test_nccl_profile_filters.py gives."""
    from ansible.module_utils import _internal

    was_controller = _internal.is_controller
    from ansible.errors import AnsibleFilterError

    from ansible_collections.ncclkit.cluster.plugins.filter import autotune, common, network, validate

    found = {}
    for module in (autotune, common, network, validate):
        found.update(module.FilterModule().filters())
    yield found, AnsibleFilterError
    _internal.is_controller = was_controller


def test_run_plan_reads_each_hosts_gpus_and_launcher(filters):
    found, dummy = filters
    hostvars = {"n1": {"nccl_validate_host": {"gpus": 2}, "ncclkit_launch": {"mpirun": PROFILE}},
                "n2": {"nccl_validate_host": {"gpus": 0}}}
    got = found["nccl_validate_run_plan"](["n1", "n2"], hostvars, SETTINGS)
    assert got["gpu_hosts"] == ["n1"] and got["launcher"] == PROFILE and got["report_dir"] == "/work/reports"
    assert got["note"] == "multi-node run skipped: hosts without GPU (n2) cannot join it"


def test_run_plan_refuses_a_bad_gloo_word_in_ansibles_terms(filters):
    found, filter_error = filters
    with pytest.raises(filter_error, match="nccl_validate_gloo is 'often': set it to auto"):
        found["nccl_validate_run_plan"](["n1"], {"n1": {}}, dict(SETTINGS, gloo="often"))


def test_tristate_filter(filters):
    found, filter_error = filters
    assert [found["tristate"](word, "v") for word in ("auto", "required", "False")] == ["auto", "on", "off"]
    with pytest.raises(filter_error, match="nccl_tests_mpi is 'half'"):
        found["tristate"]("half", "nccl_tests_mpi")


def test_find_slow_decision_takes_every_word_and_refuses_others(filters):
    found, filter_error = filters
    assert found["find_slow_decision"]([], "required", 2)["run"] is True
    assert found["find_slow_decision"]([], "disabled", 2) == {"run": False, "why": "not asked for"}
    with pytest.raises(filter_error, match="nccl_validate_find_slow is 'later'"):
        found["find_slow_decision"]([], "later", 2)


def test_hosts_left_out_reads_the_cluster_address_from_hostvars(filters):
    found, dummy = filters
    hostvars = {"n1": {"ncclkit_cluster_ip": "10.0.0.1"}, "n2": {}, "n3": {"ncclkit_cluster_ip": "10.0.0.3"}}
    assert found["hosts_left_out"](["n3", "n2", "n1"], hostvars, ["n1", "n2"]) == ["n2", "n3"]


def test_cluster_mtu_plan_reads_jumbo_frames_as_a_tristate(filters):
    found, dummy = filters
    hosts = {"n1": {"ifname": "eth0", "mtu": 1500, "max_mtu": 9000, "erdma": True}}
    # eRDMA takes 8500 with jumbo frames on, 1400 with them off: both words of each say the same.
    assert [found["cluster_mtu_plan"]("auto", hosts, word)["mtu"] for word in ("true", "required", "false", "no")] == \
        [8500, 8500, 1400, 1400]
    assert "cloud_alibaba_jumbo_frames is 'big'" in found["cluster_mtu_plan"]("auto", hosts, "big")["error"]


def test_autotune_host_and_outcome(filters):
    found, filter_error = filters
    facts = {"nccl_preflight_gpus": [{"name": "NVIDIA H200"}], "ncclkit_nccl": {"version": "2.28.9"},
             "ncclkit_cluster_ifname": "eth1"}
    got = found["nccl_autotune_host"](facts, 2, {"NCCL_IB_DISABLE": "1"})
    assert got == {"path": "/etc/ncclkit/autotune.json",
                   "hardware": {"nodes": 2, "gpus": "1 x NVIDIA H200", "nccl_version": "2.28.9", "transport": "any",
                                "nic": "eth1"}}
    # The role's kept-result check and its record use the same fingerprint filter.
    assert got["hardware"] == found["nccl_autotune_fingerprint"](
        {"nodes": 2, "gpus": ["NVIDIA H200"], "nccl_version": "2.28.9", "transport": "any", "ifname": "eth1"})
    with pytest.raises(filter_error, match="no decision"):
        found["nccl_autotune_outcome"]({}, {}, [{"name": "defaults", "env": {}}],
                                       {"reason": "", "repetitions": 3, "bytes": "1M", "transport": "any"})
