"""The nccl_diagnose module: arguments in, findings and facts out, failing only when asked to."""

import json
from pathlib import Path

import pytest
import yaml
from ansible.module_utils.testing import patch_module_args

from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.rules import PRIORITY
from ansible_collections.ncclkit.cluster.plugins.modules import nccl_diagnose

SAMPLES = Path(__file__).resolve().parents[3] / "samples"
BAD_IFNAME = SAMPLES / "h200-2host-bad-socket-ifname.txt"
DEBUG_INFO = SAMPLES / "h200-2host-socket-nccl-debug-info.txt"


def run(capsys, args):
    with patch_module_args(args), pytest.raises(SystemExit) as exit_info:
        nccl_diagnose.main()
    return exit_info.value.code, json.loads(capsys.readouterr().out)


def test_a_failed_log_reports_findings_facts_and_one_msg_line_per_error(capsys):
    code, result = run(capsys, {"path": str(BAD_IFNAME)})
    assert code == 0 and result["changed"] is False and "failed" not in result
    # Open MPI's "Process name: [[J,1],0] / Exit code: 3" is rank 0's exit, after the root cause too.
    assert [f["code"] for f in result["findings"]] == ["no_socket_interface", "test_nccl_failure", "rank_failed"]
    facts = result["ansible_facts"]["nccl_diagnose"]
    assert facts["findings"] == result["findings"] and set(facts["hosts"]) == {"node0", "node1"}
    lines = result["msg"].splitlines()
    assert len(lines) == 2 and lines[0].startswith("node0: NCCL found no network interface")
    assert lines[1] == "2 later error(s) follow from no_socket_interface: test_nccl_failure, rank_failed"
    assert result["findings"][1]["consequence_of"] == "no_socket_interface"
    assert " -> set NCCL_SOCKET_IFNAME to the cluster NIC" in lines[0]
    assert result["findings"][0]["source"] == str(BAD_IFNAME)


def test_check_mode_gives_the_same_diagnosis(capsys):
    dummy, normal = run(capsys, {"path": str(DEBUG_INFO)})
    code, checked = run(capsys, {"path": str(DEBUG_INFO), "_ansible_check_mode": True})
    assert code == 0 and checked["changed"] is False
    assert checked["ansible_facts"] == normal["ansible_facts"]
    assert checked["msg"].startswith("no errors in") and "node0, node1" in checked["msg"]


def test_content_and_options_reach_the_reader(capsys):
    code, result = run(capsys, {"content": DEBUG_INFO.read_text(), "cluster_cidr": "10.0.0.0/8",
                                "expected_transport": "ib"})
    assert code == 0
    found = {(f["code"], f["host"]) for f in result["findings"] if f["severity"] == "error"}
    assert {("nic_outside_cluster", "node0"), ("socket_instead_of_ib", "node1")} <= found
    assert result["findings"][0]["source"] == "content"
    hosts = result["ansible_facts"]["nccl_diagnose"]["hosts"]
    assert hosts["node0"]["transport"] == "Socket" and hosts["node1"]["nccl_versions"] == ["2.28.9+cuda13.0"]


def test_cluster_ips_and_default_host(capsys):
    content = "RuntimeError: Gloo connectFullMesh failed with [../gloo/transport/tcp/pair.cc:144] no error\n"
    dummy, result = run(capsys, {"content": content, "default_host": "gpu7", "cluster_ips": ["10.0.0.7"]})
    assert result["findings"][0]["host"] == "gpu7" and result["msg"].startswith("gpu7: Gloo")


def test_several_paths_are_read_as_one_log(capsys, tmp_path):
    (tmp_path / "a.log").write_text("a:1:1 [0] NCCL INFO NCCL version 2.28.9+cuda13.0\n")
    (tmp_path / "b.log").write_text("b:1:1 [0] NCCL INFO NCCL version 2.26.2+cuda12.2\n")
    dummy, result = run(capsys, {"path": [str(tmp_path / "a.log"), str(tmp_path / "b.log")]})
    assert [f["code"] for f in result["findings"]] == ["nccl_version_mismatch"]


@pytest.mark.parametrize("fail_on, fails", [("never", False), ("error", True), ("warning", True)])
def test_fail_on_decides_whether_errors_fail_the_task(capsys, fail_on, fails):
    code, result = run(capsys, {"path": str(BAD_IFNAME), "fail_on": fail_on})
    assert (code == 1) is fails and bool(result.get("failed")) is fails
    assert result["findings"] and result["ansible_facts"]["nccl_diagnose"]["hosts"]


def test_fail_on_warning_fails_on_warnings_only_logs(capsys):
    assert run(capsys, {"path": str(DEBUG_INFO), "fail_on": "error"})[0] == 0
    code, result = run(capsys, {"path": str(DEBUG_INFO), "fail_on": "warning"})
    assert code == 1 and result["failed"] and result["msg"].startswith("no errors")


def test_missing_file_fails_with_the_reason(capsys, tmp_path):
    code, result = run(capsys, {"path": str(tmp_path / "nope.log")})
    assert code == 1 and result["failed"] and "nope.log: cannot read" in result["msg"]
    assert "Traceback" not in result["msg"]


def test_binary_file_fails_and_latin1_file_is_read_with_a_note(capsys, tmp_path):
    binary = tmp_path / "core"
    binary.write_bytes(bytes(range(256)) * 100)
    code, result = run(capsys, {"path": str(binary)})
    assert code == 1 and "binary" in result["msg"]
    latin1 = tmp_path / "latin1.log"
    latin1.write_bytes("node0:1:1 [0] NCCL INFO NCCL version 2.28.9+cuda13.0 — é\n".encode("latin-1", "replace"))
    code, result = run(capsys, {"path": str(latin1)})
    assert code == 0 and "not valid UTF-8" in result["ansible_facts"]["nccl_diagnose"]["notes"][0]


@pytest.mark.parametrize("args, message", [
    ({}, "one of the following is required: path, content"),
    ({"path": str(BAD_IFNAME), "content": "a log"}, "mutually exclusive"),
    ({"content": "a log", "cluster_cidr": "10.0.0.0/40"}, "not an IP address or network"),
    ({"content": "a log", "expected_transport": "rdma"}, "value of expected_transport must be one of"),
])
def test_bad_arguments_fail_cleanly(capsys, args, message):
    code, result = run(capsys, args)
    assert code == 1 and result["failed"] and message in result["msg"]


def test_the_log_content_is_never_echoed_back(capsys):
    # A log can carry secrets from the environment (tokens printed by a launcher): content is no_log.
    secret = "hf_Zq8vT3sEcReTtOkEn"
    code, result = run(capsys, {"content": f"HF_TOKEN={secret}\n" + BAD_IFNAME.read_text(), "fail_on": "error"})
    assert code == 1 and result["failed"]
    assert secret not in json.dumps(result)
    assert nccl_diagnose.ARGUMENT_SPEC["content"]["no_log"] is True


def test_documentation_matches_the_argument_spec():
    doc = yaml.safe_load(nccl_diagnose.DOCUMENTATION)
    yaml.safe_load(nccl_diagnose.EXAMPLES)
    returned = yaml.safe_load(nccl_diagnose.RETURN)
    options = doc["options"]
    assert set(options) == set(nccl_diagnose.ARGUMENT_SPEC)
    for name, spec in nccl_diagnose.ARGUMENT_SPEC.items():
        assert options[name]["type"] == spec["type"]
        assert options[name].get("default") == spec.get("default")
        assert options[name].get("choices") == spec.get("choices")
        assert options[name].get("elements") == spec.get("elements")
    assert {"msg", "findings", "ansible_facts"} <= set(returned)
    documented = returned["findings"]["contains"]["code"]["description"]
    assert all(f"C({code})" in documented for code in PRIORITY)


def test_content_with_nothing_recognisable_says_so_and_is_not_healthy(capsys):
    code, result = run(capsys, {"content": "Collecting numpy\nSuccessfully installed numpy\n"})
    facts = result["ansible_facts"]["nccl_diagnose"]
    assert code == 0 and facts["judged"] is False and result["findings"] == []
    assert result["msg"].startswith("NOTHING TO JUDGE") and "HEALTHY" not in result["msg"]


def test_every_finding_says_its_confidence(capsys):
    dummy, result = run(capsys, {"path": str(BAD_IFNAME)})
    assert {f["confidence"] for f in result["findings"]} <= {"high", "low"} and result["findings"]
