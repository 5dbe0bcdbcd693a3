"""Any error line in nccl-tests output fails the run, whatever require_complete says (real outputs)."""

from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests.output import evaluate_gates, parse
from conftest import SAMPLES


def without_nccl_lines(name):
    """A real failed run as it looks without NCCL_DEBUG: its NCCL INFO/WARN lines dropped."""
    lines = (SAMPLES / name).read_text().splitlines()[1:]  # not the source line
    return "\n".join(line for line in lines if "NCCL INFO" not in line and "NCCL WARN" not in line)


def test_a_test_nccl_failure_without_rows_fails_even_when_completeness_is_not_required():
    run = parse(without_nccl_lines("06c-nccl-tests-issue287-2gpu-nccl-debug-info-failure.txt"))[0]
    assert run["rows"] == [] and not run["complete"]
    verdict = evaluate_gates(run, require_complete=False)
    assert verdict["passed"] is False
    gate = next(g for g in verdict["gates"] if g["name"] == "no_error_lines")
    assert "Test NCCL failure common.cu:392 'unhandled cuda error" in gate["message"]
    assert gate["measured"] == 6  # the failure line and the five "Test failure" lines after it


def test_a_killed_rank_fails_the_run_whose_rows_before_the_kill_look_fine():
    # mpirun's "exited on signal 9" and the survivors' NCCL WARN lines, after 18 good rows (8 B to 1 MiB).
    run = parse((SAMPLES / "h200-stuck-arp_kill.log").read_text())[0]
    assert len(run["rows"]) == 18 and run["wrong_total"] == 0
    verdict = evaluate_gates(run, require_complete=False)
    assert verdict["passed"] is False
    message = next(g for g in verdict["gates"] if g["name"] == "no_error_lines")["message"]
    assert "exited on signal 9" in message or "Primary job" in message


def test_require_complete_reports_the_error_lines_once():
    run = parse(without_nccl_lines("06c-nccl-tests-issue287-2gpu-nccl-debug-info-failure.txt"))[0]
    names = [g["name"] for g in evaluate_gates(run, require_complete=True)["gates"] if not g["passed"]]
    assert names == ["require_complete"]


def test_a_clean_run_has_no_error_gate():
    run = parse((SAMPLES / "h200-2host-socket-defaults.txt").read_text())[0]
    verdict = evaluate_gates(run, require_complete=False)
    assert verdict["passed"] is True and "no_error_lines" not in [g["name"] for g in verdict["gates"]]
