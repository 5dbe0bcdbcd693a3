"""module_utils.validate_gates: nccl_validate's gates on by default, calibrated on the cluster's own
hardware (RDMA port rates) and links (the measured TCP rate), each with where its threshold came from."""

from __future__ import annotations

import pytest

from ansible_collections.ncclkit.cluster.plugins.filter.validate import FilterModule
from ansible_collections.ncclkit.cluster.plugins.module_utils.report.verdict import build_report
from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.gates import (
    GateError,
    busbw_gate,
    expected_transport,
    fabric_rate,
    gate_rows,
    measured_link,
    plan_gates,
    port_rate_gbps,
)

nccl_validate_gates = FilterModule().filters()["nccl_validate_gates"]

IB = ["mlx5_0|1|4: ACTIVE|InfiniBand|mlx5_core|400 Gb/sec (4X NDR)",
      "mlx5_1|1|4: ACTIVE|InfiniBand|mlx5_core|400 Gb/sec (4X NDR)"]
IB_ONE_DOWN = [IB[0], "mlx5_1|1|1: DOWN|InfiniBand|mlx5_core|400 Gb/sec (4X NDR)"]
EFA = ["rdmap0s6|1|4: ACTIVE|Unspecified|efa|100 Gb/sec (4X EDR)"]
ERDMA = ["erdma_0|1|4: ACTIVE|Ethernet|erdma|25 Gb/sec (1X EDR)"]
LINKS = {"measured": True, "median_gbps": 12.9, "threshold_gbps": 6.45, "threshold_source": "0.5 x median",
         "slow": [], "passed": True,
         "links": [{"source": "node1", "target": "node2", "round": 0, "sent_gbps": 12.9, "received_gbps": 13.1},
                   {"source": "node2", "target": "node1", "round": 0, "sent_gbps": 12.7, "received_gbps": 12.8}]}
AUTO = {"expected_transport": "auto", "min_busbw_gbps": "auto", "busbw_fraction": 0.5,
        "gloo_min_busbw_gbps": "auto", "gloo_busbw_fraction": 0.05}


@pytest.mark.parametrize("ports, transport", [
    ({"a": IB, "b": IB}, "ib"), ({"a": EFA, "b": EFA}, "efa"), ({"a": ERDMA, "b": ERDMA}, "ib"),
    ({"a": [], "b": []}, "socket"),
    # One host down to sockets: nccl_profile fails that first; here it is said, not guessed.
    ({"a": IB, "b": []}, "any"),
])
def test_the_transport_comes_from_the_active_ports_as_nccl_profile_rdma_auto_decides(ports, transport):
    assert expected_transport("auto", ports)["transport"] == transport


def test_the_transport_says_where_it_came_from_and_an_explicit_one_wins():
    assert expected_transport("auto", {"a": IB, "b": IB})["source"] == \
        "hardware: active IB port(s) on every host (mlx5_0, mlx5_1)"
    assert expected_transport("auto", {"a": [], "b": []})["source"] == \
        "hardware: no active IB/eRDMA/EFA port on any host"
    assert expected_transport("auto", {"a": IB, "b": []})["source"] == \
        "not calibrated: the hosts differ (a IB, b Socket)"
    explicit = {"transport": "socket", "source": "explicit nccl_validate_expected_transport"}
    assert expected_transport("SOCKET", {"a": IB}) == explicit
    # A host nccl_preflight never surveyed is not taken for one without RDMA.
    assert expected_transport("auto", {"a": IB, "b": None})["transport"] == "any"
    assert expected_transport("auto", {"a": IB, "b": ""})["source"].startswith(
        "not calibrated: no RDMA port listing from nccl_preflight on b")
    with pytest.raises(GateError, match="nccl_validate_expected_transport must be auto"):
        expected_transport("rdma", {})


def test_port_rates_are_read_from_sysfs_text():
    assert port_rate_gbps("400 Gb/sec (4X NDR)") == 400.0
    assert port_rate_gbps("2.5 Gb/sec (1X SDR)") == 2.5
    assert port_rate_gbps("") is None and port_rate_gbps(None) is None and port_rate_gbps("fast") is None


def test_the_fabric_rate_is_the_slowest_nodes_sum_of_active_ports():
    rate = fabric_rate({"a": IB, "b": IB_ONE_DOWN}, "ib")
    assert rate["gbps"] == 400.0 and "(b, the slowest" in rate["source"]
    assert fabric_rate({"a": EFA}, "efa")["gbps"] == 100.0
    # Lines from before the rate was listed (5 fields): no rate, so no calibration.
    old = fabric_rate({"a": [line.rsplit("|", 1)[0] for line in IB]}, "ib")
    assert old["gbps"] is None and old["source"].startswith("no RDMA port rate read on a")


def test_the_measured_link_is_the_median_of_the_first_host_with_a_measurement():
    assert measured_link([{}, {"link_bandwidth": LINKS}])["gbps"] == 12.9
    assert measured_link([{"link_bandwidth": LINKS}])["source"] == "median link 12.9 Gbit/s (iperf3, 2 link(s))"
    for missing in ([], [{}], [None], [{"link_bandwidth": {"measured": False, "median_gbps": 3}}],
                    [{"link_bandwidth": {"measured": True, "median_gbps": 0}}]):
        assert measured_link(missing)["gbps"] is None, missing


def test_auto_is_a_fraction_of_the_link_rate_in_gigabytes():
    gate = busbw_gate("auto", "nccl_validate_min_busbw_gbps", 0.5, {"gbps": 400.0, "source": "fabric 400 Gbit/s"})
    assert gate == {"threshold_gbps": 25.0, "source": "0.5 x fabric 400 Gbit/s / 8", "state": "auto"}


def test_an_explicit_number_overrides_and_zero_is_not_gated():
    assert busbw_gate(3, "nccl_validate_min_busbw_gbps", 0.5, {"gbps": 400.0}) == {
        "threshold_gbps": 3.0, "source": "explicit nccl_validate_min_busbw_gbps", "state": "explicit"}
    assert busbw_gate("0", "nccl_validate_min_busbw_gbps", 0.5, {"gbps": 400.0})["state"] == "not gated"


def test_without_a_link_rate_the_gate_is_not_calibrated_never_a_pass():
    gate = busbw_gate("auto", "nccl_validate_gloo_min_busbw_gbps", 0.05, measured_link([]))
    assert gate["threshold_gbps"] is None and gate["state"] == "not calibrated"
    assert gate["source"].startswith("not calibrated: no link measurement (ncclkit_network.link_bandwidth")


@pytest.mark.parametrize("setting, fraction, message", [
    ("fast", 0.5, "nccl_validate_min_busbw_gbps must be auto or a number of GB/s"),
    (-1, 0.5, "must not be negative"),
    ("auto", 0, "nccl_validate_busbw_fraction must be above 0 and at most 1"),
    ("auto", 2, "nccl_validate_busbw_fraction must be above 0 and at most 1"),
])
def test_bad_settings_name_the_variable(setting, fraction, message):
    with pytest.raises(GateError, match=message):
        busbw_gate(setting, "nccl_validate_min_busbw_gbps", fraction, {"gbps": 10})


def test_the_plan_gates_sockets_and_gloo_on_the_links_and_rdma_on_the_fabric():
    socket = nccl_validate_gates(AUTO, {"a": [], "b": []}, [{"link_bandwidth": LINKS}, {}])
    assert socket["transport"]["transport"] == "socket"
    assert socket["multi"]["threshold_gbps"] == round(0.5 * 12.9 / 8, 4)
    assert socket["gloo"]["threshold_gbps"] == round(0.05 * 12.9 / 8, 4)
    assert socket["gloo"]["source"] == "0.05 x median link 12.9 Gbit/s (iperf3, 2 link(s)) / 8"
    rdma = plan_gates(AUTO, {"a": IB, "b": IB}, [{"link_bandwidth": LINKS}])
    assert rdma["multi"]["threshold_gbps"] == 50.0 and rdma["gloo"]["threshold_gbps"] == round(0.05 * 12.9 / 8, 4)
    unknown = plan_gates(AUTO, {"a": IB, "b": []}, [])
    assert unknown["multi"]["state"] == "not calibrated" and "the hosts differ" in unknown["multi"]["source"]


def test_the_filter_reports_a_bad_setting_as_one_line():
    from ansible.errors import AnsibleFilterError
    with pytest.raises(AnsibleFilterError, match="nccl_validate_gloo_busbw_fraction must be above 0"):
        nccl_validate_gates(dict(AUTO, gloo_busbw_fraction=5), {"a": []}, [{"link_bandwidth": LINKS}])


def gloo_run(busbw, gate):
    gates = [{"name": "expected_ranks", "passed": True, "message": "4 of 4"}]
    if gate["threshold_gbps"]:
        gates.append({"name": "min_busbw", "passed": busbw >= gate["threshold_gbps"], "message": "busbw"})
    return {"name": "gloo", "host": "node1", "hosts": ["node1", "node2"], "ran": True, "rc": 0,
            "busbw_gate": gate, "perf": {"backend": "gloo", "peak_busbw_gbps": busbw, "gates": gates,
                                         "passed": all(g["passed"] for g in gates)}}


def test_the_report_shows_each_gate_with_its_threshold_and_source():
    gate = plan_gates(AUTO, {"a": [], "b": []}, [{"link_bandwidth": LINKS}])["gloo"]
    report = build_report({"runs": [gloo_run(0.01, gate)], "hosts": {"node1": {"gpus": 0}, "node2": {"gpus": 0}}})
    assert not report["passed"]
    assert report["runs"][0]["gate_rows"] == [{"name": "busbw (GB/s)", "measured": 0.01, "threshold": 0.0806,
                                               "source": "0.05 x median link 12.9 Gbit/s (iperf3, 2 link(s)) / 8",
                                               "state": "failed"}]
    assert gate_rows(gloo_run(0.5, gate))[0]["state"] == "passed"


def test_an_uncalibrated_gate_is_a_note_in_the_report_not_a_pass():
    gate = plan_gates(AUTO, {"a": [], "b": []}, [])["gloo"]
    report = build_report({"runs": [gloo_run(0.5, gate)], "hosts": {"node1": {"gpus": 0}, "node2": {"gpus": 0}}})
    assert report["runs"][0]["gate_rows"][0]["state"] == "not calibrated"
    assert any("busbw (GB/s) gate not calibrated: no link measurement" in note for note in report["notes"])


def test_the_transport_row_fails_on_a_fall_back_and_passes_on_a_clean_log():
    transport = {"transport": "ib", "source": "hardware: active IB port(s) on every host (mlx5_0)"}
    fallback = {"findings": [{"code": "socket_instead_of_ib", "cause": "NCCL used NET/Socket"}], "hosts": {}}
    run = {"name": "multi", "transport_gate": transport, "diagnosis": fallback}
    assert gate_rows(run) == [{"name": "transport", "measured": "fell back: NCCL used NET/Socket", "threshold": "IB",
                               "source": transport["source"], "state": "failed"}]
    assert gate_rows(dict(run, diagnosis={"findings": [], "hosts": {}}))[0]["state"] == "passed"


def test_the_busbw_row_of_an_nccl_tests_run_reads_nccl_perfs_gate():
    gate = {"threshold_gbps": 3.0, "source": "explicit nccl_validate_min_busbw_gbps", "state": "explicit"}
    failed = {"name": "min_busbw_gbps", "limit": 3.0, "measured": 2.99, "passed": False,
              "message": "busbw 2.99 GB/s ... is below"}
    perf = {"peak_busbw_gbps": 3.29, "gates": [failed]}
    row = gate_rows({"name": "multi", "busbw_gate": gate, "perf": perf})[0]
    assert (row["measured"], row["threshold"], row["state"]) == (2.99, 3.0, "failed")
    # A run whose output could not be read measured nothing: against a threshold that fails.
    assert gate_rows({"name": "multi", "busbw_gate": gate, "perf": None})[0]["state"] == "failed"
