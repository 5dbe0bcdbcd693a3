"""`ncclkit diagnose` and `ncclkit parse`: verdicts, the JSON document, exit codes, bad input."""

import io
import json

import pytest

from conftest import SAMPLES
from ncclkit import cli, exitcodes
from ncclkit.commands import diagnose as diagnose_cli

FINDING_KEYS = {"code", "severity", "host", "rank", "cause", "fix", "evidence", "consequence_of", "confidence",
                "explained_by"}


def ncclkit(capsys, *argv):
    code = cli.main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_diagnose_prints_the_root_cause_first_and_exits_1(capsys):
    code, out, err = ncclkit(capsys, "diagnose", SAMPLES / "h200-stuck-torch_kill-node0.log",
                             SAMPLES / "h200-stuck-torch_kill-node1.log")
    assert code == exitcodes.PROBLEM and not err
    lines = out.splitlines()
    assert lines[0].startswith("PROBLEM: rank_killed (node1, rank 1): rank 1 on node1 (pid 1747)")
    assert lines[1].startswith("  fix: find who sent the signal")
    assert any(line.startswith("follows from rank_killed: remote_exited on node0") for line in lines)


def test_diagnose_json_is_the_stable_document(capsys):
    code, out, dummy = ncclkit(capsys, "diagnose", "--json", SAMPLES / "h200-stuck-arp_stop.log")
    document = json.loads(out)
    assert code == 1 and set(document) == {"verdict", "findings"}
    assert all(set(f) == FINDING_KEYS for f in document["findings"])
    first = document["findings"][0]
    assert (first["code"], first["rank"], first["host"], first["consequence_of"]) == ("hang_in_collective", 1,
                                                                                      "node1", None)
    assert first["evidence"].endswith("h200-stuck-arp_stop.log:129: ncclkit-forensics: rank=1 host=node1 pid=759 "
                                      "state=T (stopped) wchan=do_signal_stop comm=all_reduce_perf")


def test_diagnose_healthy_exits_0(capsys):
    code, out, dummy = ncclkit(capsys, "diagnose", SAMPLES / "h200-2host-socket-defaults.txt")
    assert code == exitcodes.OK and out.startswith("HEALTHY: no errors in")


def test_nothing_to_judge_is_exit_3_with_one_line_never_healthy(capsys, tmp_path):
    prose = tmp_path / "app.log"
    prose.write_text("Collecting numpy\nSuccessfully installed numpy-2.1.0\n")
    code, out, err = ncclkit(capsys, "diagnose", prose)
    assert code == exitcodes.BAD_INPUT and not out and len(err.strip().splitlines()) == 1
    assert "NOTHING TO JUDGE" in err and "NCCL_DEBUG=INFO" in err and str(prose) in err
    code, out, dummy = ncclkit(capsys, "diagnose", "--json", prose)
    document = json.loads(out)
    assert code == exitcodes.BAD_INPUT and document["findings"] == [] and document["verdict"].startswith("NOTHING")


def test_a_run_that_stopped_is_exit_1_and_says_its_confidence(capsys, tmp_path):
    cut = tmp_path / "all_reduce.txt"
    cut.write_text("# nThread 1 nGpus 1 minBytes 8 maxBytes 64 step: 2(factor) warmup iters: 5 iters: 20\n"
                   "#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
                   "           8             2     float     sum      -1    20.11    0.00    0.00      0\n")
    code, out, dummy = ncclkit(capsys, "diagnose", cut)
    assert code == exitcodes.PROBLEM and out.startswith("PROBLEM: incomplete_run")
    assert "  confidence: low" in out


def test_diagnose_reads_stdin(capsys, monkeypatch):
    data = (SAMPLES / "h200-stuck-arp_kill.log").read_bytes()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, out, dummy = ncclkit(capsys, "diagnose", "-")
    assert code == 1 and out.startswith("PROBLEM: rank_killed (node1, rank 1)")
    assert "<stdin>:145:" in out


def bad_inputs(tmp_path):
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    blank = tmp_path / "blank.log"
    blank.write_bytes(b"\n \n\x00\x00")
    binary = tmp_path / "core"
    binary.write_bytes(bytes(range(256)) * 64)
    return {"missing": (tmp_path / "nope.log", "cannot read"), "empty": (empty, "empty"),
            "blank": (blank, "empty"), "binary": (binary, "binary"), "folder": (tmp_path, "cannot read")}


@pytest.mark.parametrize("kind", ["missing", "empty", "blank", "binary", "folder"])
def test_bad_input_is_one_line_and_exit_3(capsys, tmp_path, kind):
    path, words = bad_inputs(tmp_path)[kind]
    for command in ("diagnose", "parse"):
        code, out, err = ncclkit(capsys, command, path)
        assert code == exitcodes.BAD_INPUT and not out, (command, kind)
        assert len(err.strip().splitlines()) == 1 and str(path) in err and "Traceback" not in err
        if command == "diagnose":
            assert words in err


def test_a_bad_inventory_for_the_live_check_is_exit_3(capsys, tmp_path):
    case = SAMPLES / "failures" / "eth1_down-1"
    code, out, err = ncclkit(capsys, "diagnose", "-i", tmp_path / "nope.yml", case / "node1.log", case / "node2.log")
    assert code == exitcodes.BAD_INPUT and not out and "does not exist" in err and len(err.splitlines()) == 1


def test_the_live_check_explains_the_root_and_joins_the_document(capsys, monkeypatch, tmp_path):
    # The check itself runs on the lab (benchmarks/fault_matrix.py); here its document is given.
    case = SAMPLES / "failures" / "eth1_down-1"
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("cluster:\n  hosts:\n    node1:\n    node2:\n")
    asked = []

    def fake_check(path, hosts, quiet=False):
        asked.append((path, hosts, quiet))
        return {"verdict": "NOT CHECKED: node1: ...", "ready": False, "unreachable": {}, "hosts": hosts,
                "master": {}, "findings": [{"code": "cluster_nic_down", "severity": "error", "host": "node2",
                                            "cause": "node2's cluster NIC eth1 is down", "fix": "ip link set eth1 up",
                                            "evidence": []}]}
    monkeypatch.setattr("ncclkit.commands.check.run_check", fake_check)
    code, out, err = ncclkit(capsys, "diagnose", "--json", "-i", inventory, case / "node1.log", case / "node2.log")
    document = json.loads(out)
    assert code == exitcodes.PROBLEM and asked == [(inventory, ["node1", "node2"], True)]
    assert "checking 2 host(s)" in err
    assert document["live_check"] == {"verdict": "NOT CHECKED: node1: ...", "ready": False, "unreachable": {}}
    root = document["findings"][0]
    assert (root["host"], root["explained_by"]) == ("node2", ["cluster_nic_down"])
    assert all(set(f) == FINDING_KEYS for f in document["findings"])


def test_usage_error_is_exit_2(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["diagnose", "--expected-transport", "carrier-pigeon", "x.log"])
    assert exit_info.value.code == exitcodes.USAGE
    code, dummy, err = ncclkit(capsys, "diagnose", "-", "-")
    assert code == exitcodes.USAGE and "stdin" in err


def test_interrupted_is_130(capsys, monkeypatch):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(diagnose_cli, "diagnose_command", interrupted)
    code, dummy, err = ncclkit(capsys, "diagnose", SAMPLES / "h200-stuck-arp_kill.log")
    assert code == exitcodes.INTERRUPTED and "interrupted" in err


def test_parse_passed_run(capsys):
    code, out, dummy = ncclkit(capsys, "parse", SAMPLES / "h200-2host-socket-defaults.txt")
    assert code == exitcodes.OK
    assert out.strip() == "PASSED: run 0 (all_reduce_perf), 2 rank(s) on 2 host(s), peak busbw 3.29 GB/s at 67108864 B"


def test_parse_failed_run_names_the_root_cause_first(capsys):
    code, out, dummy = ncclkit(capsys, "parse", "--json", SAMPLES / "h200-2host-bad-socket-ifname.txt")
    document = json.loads(out)
    assert code == exitcodes.PROBLEM and set(document) == {"verdict", "findings", "result"}
    codes = [(f["code"], f["consequence_of"]) for f in document["findings"]]
    assert codes[0] == ("no_socket_interface", None)
    assert ("require_complete", "no_socket_interface") in codes
    assert all(set(f) == FINDING_KEYS for f in document["findings"])
    assert document["result"]["passed"] is False and document["verdict"].startswith("FAILED: run 0")


def test_parse_error_line_fails_without_require_complete(capsys):
    code, out, dummy = ncclkit(capsys, "parse", "--no-require-complete", SAMPLES / "h200-stuck-arp_kill.log")
    assert code == exitcodes.PROBLEM
    assert out.startswith("FAILED: run 0 (all_reduce_perf), 2 rank(s) on 2 host(s): rank_killed: rank 1 on node1")
    assert "no_error_lines" in out


def test_parse_gates_from_options(capsys):
    code, out, dummy = ncclkit(capsys, "parse", "--min-busbw-gbps", "100", "--expected-ranks", "2",
                               SAMPLES / "h200-2host-socket-defaults.txt")
    assert code == exitcodes.PROBLEM and "[error] min_busbw_gbps (run): busbw" in out


def test_parse_max_size_mib_raises_the_file_limit(capsys, tmp_path):
    big = tmp_path / "long.txt"
    with open(big, "wb") as handle:  # sparse: 65 MiB of NUL bytes on paper
        handle.truncate(65 * 1024 * 1024)
    code, dummy, err = ncclkit(capsys, "parse", big)
    assert code == exitcodes.BAD_INPUT and "over the 67108864-byte limit" in err
    code, dummy, err = ncclkit(capsys, "parse", "--max-size-mib", "66", big)
    assert code == exitcodes.BAD_INPUT and "binary (a NUL byte at offset 0)" in err


def test_the_cli_offers_the_transports_the_engine_takes():
    # A copy, not an import: importing the engine at parser set-up would slow every `ncclkit` command.
    from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.log import TRANSPORTS
    assert diagnose_cli.TRANSPORTS == TRANSPORTS
