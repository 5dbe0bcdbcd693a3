"""The failure corpus (tests/samples/failures/<case>/): `ncclkit diagnose --json` over each case's logs must
name the root cause its expected.json states (the FIRST finding only), with the right exit code.

Prints the accuracy per root-cause class (a `known_failure` case counts as wrong there); fails on any wrong
case not marked `known_failure`, on a marked case that passes (its mark must go), and when more than 5 % of
the cases are marked. tests/samples/failures/README.md describes the format.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import shutil
from pathlib import Path

import pytest

from conftest import SAMPLES
from ncclkit import cli

CORPUS = SAMPLES / "failures"
EXPECTED = "expected.json"
MAX_CASE_BYTES = 256 * 1024
MAX_KNOWN_FAILURE_SHARE = 0.05
MIN_FAILURE_CASES = 40
MIN_FAILURE_CLASSES = 15
MIN_HEALTHY_CASES = 10
EXITS = (0, 1, 3)

# key -> the types its value may have; `known_failure` is the one optional key.
SCHEMA = {
    "code": (str, type(None)),
    "host": (str, type(None)),
    "rank": (int, type(None)),
    "cause_has": (list,),
    "fix_has": (list,),
    "exit": (int,),
    "class": (str,),
    "shape_from": (str,),
}
OPTIONAL = {"known_failure": (str,)}


def case_dirs(corpus: Path = CORPUS) -> list[Path]:
    return sorted(path for path in corpus.iterdir() if path.is_dir()) if corpus.is_dir() else []


def log_files(case: Path) -> list[Path]:
    return sorted(path for path in case.iterdir() if path.is_file() and path.name != EXPECTED)


def expectation_errors(case: Path) -> list[str]:
    """What is wrong with a case folder and its expected.json (empty: a valid case)."""
    path = case / EXPECTED
    if not path.is_file():
        return [f"{case.name}: no {EXPECTED}"]
    try:
        expected = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        return [f"{case.name}: {EXPECTED} is not JSON: {error}"]
    if not isinstance(expected, dict):
        return [f"{case.name}: {EXPECTED} is not an object"]
    errors = []
    missing = sorted(set(SCHEMA) - set(expected))
    unknown = sorted(set(expected) - set(SCHEMA) - set(OPTIONAL))
    if missing:
        errors.append(f"{case.name}: {EXPECTED} lacks {', '.join(missing)}")
    if unknown:
        errors.append(f"{case.name}: {EXPECTED} has unknown key(s) {', '.join(unknown)}")
    for key, types in {**SCHEMA, **OPTIONAL}.items():
        if key in expected and (not isinstance(expected[key], types) or isinstance(expected[key], bool)):
            errors.append(f"{case.name}: {key} must be {' or '.join(t.__name__ for t in types)}")
    for key in ("cause_has", "fix_has"):
        if isinstance(expected.get(key), list) and not all(isinstance(w, str) and w for w in expected[key]):
            errors.append(f"{case.name}: {key} must hold non-empty strings")
    for key in ("shape_from", "class", "known_failure"):
        if isinstance(expected.get(key), str) and not expected[key].strip():
            errors.append(f"{case.name}: {key} is empty")
    if expected.get("exit") not in EXITS:
        errors.append(f"{case.name}: exit must be one of {EXITS}")
    if expected.get("code") is None and expected.get("exit") == 1:
        errors.append(f"{case.name}: a case without a root cause (code null) cannot exit 1")
    if expected.get("class") == "healthy" and (expected.get("code") is not None or expected.get("exit") != 0):
        errors.append(f"{case.name}: a healthy case has code null and exit 0")
    logs = log_files(case)
    if not logs:
        errors.append(f"{case.name}: no log file besides {EXPECTED}")
    size = sum(p.stat().st_size for p in case.iterdir() if p.is_file())
    if size >= MAX_CASE_BYTES:
        errors.append(f"{case.name}: {size} bytes, over the {MAX_CASE_BYTES} a case may hold")
    return errors


def run_diagnose(files: list[Path]) -> tuple[int, dict | None, str]:
    """`ncclkit diagnose --json FILES` in-process: (exit code, the JSON document or None, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["diagnose", "--json", *map(str, files)])
    try:
        document = json.loads(out.getvalue()) if out.getvalue().strip() else None
    except ValueError:
        document = None
    return code, document, err.getvalue()


def judge(case: Path) -> dict:
    """The verdict on one case: {ok, wrong (why not), actual code/host/rank, expected}."""
    expected = json.loads((case / EXPECTED).read_text(encoding="utf-8"))
    exit_code, document, stderr = run_diagnose(log_files(case))
    findings = (document or {}).get("findings") or []
    first = findings[0] if findings else None
    errors = [f for f in findings if f.get("severity") == "error"]
    wrong = []
    if exit_code != expected["exit"]:
        wrong.append(f"exit {exit_code}, expected {expected['exit']}")
    if expected["code"] is None:
        if errors:
            wrong.append(f"found {errors[0]['code']} ({errors[0].get('host')}, rank {errors[0].get('rank')}), "
                         "expected no root cause")
        actual = {"code": errors[0]["code"] if errors else None}
    else:
        actual = {key: (first or {}).get(key) for key in ("code", "host", "rank")}
        if first is None:
            wrong.append(f"no finding, expected {expected['code']}" + (f" ({stderr.strip()})" if stderr else ""))
        else:
            for key in ("code", "host", "rank"):
                if expected[key] is not None and first.get(key) != expected[key]:
                    wrong.append(f"{key} {first.get(key)!r}, expected {expected[key]!r}")
            for key, field in (("cause_has", "cause"), ("fix_has", "fix")):
                text = (first.get(field) or "").lower()
                missing = [word for word in expected[key] if word.lower() not in text]
                if missing:
                    wrong.append(f"{field} lacks {missing}: {first.get(field)!r}")
    return {"case": case.name, "class": expected["class"], "ok": not wrong, "wrong": wrong, "actual": actual,
            "known_failure": expected.get("known_failure"), "verdict": (document or {}).get("verdict")}


@functools.cache
def judged(case_name: str) -> dict:
    return judge(CORPUS / case_name)


def accuracy_table(results: list[dict]) -> str:
    """Accuracy per root-cause class and overall; a known_failure case counts as wrong."""
    classes: dict = {}
    for result in results:
        classes.setdefault(result["class"], []).append(result["ok"] and not result["known_failure"])
    width = max([len("class"), len("overall"), *map(len, classes)])
    lines = [f"{'class':<{width}}  cases  right  accuracy", f"{'-' * width}  -----  -----  --------"]
    for name in sorted(classes):
        right, total = sum(classes[name]), len(classes[name])
        lines.append(f"{name:<{width}}  {total:>5}  {right:>5}  {100 * right / total:>7.0f}%")
    right = sum(sum(v) for v in classes.values())
    total = sum(len(v) for v in classes.values())
    lines.append(f"{'overall':<{width}}  {total:>5}  {right:>5}  {100 * right / max(total, 1):>7.1f}%")
    return "\n".join(lines)


CASES = [case.name for case in case_dirs()]


@pytest.mark.parametrize("case_name", CASES)
def test_expected_json_is_valid(case_name):
    assert expectation_errors(CORPUS / case_name) == []


@pytest.mark.parametrize("case_name", CASES)
def test_first_finding_is_the_expected_root_cause(case_name):
    if expectation_errors(CORPUS / case_name):
        pytest.fail(f"{case_name}: invalid case (see test_expected_json_is_valid)")
    result = judged(case_name)
    if not result["ok"] and result["known_failure"]:
        pytest.xfail(f"known_failure: {result['known_failure']}")
    assert not result["known_failure"], f"{case_name} passes now: remove its known_failure from {EXPECTED}"
    assert result["ok"], f"{case_name}: " + "; ".join(result["wrong"]) + f" | verdict: {result['verdict']}"


def test_corpus_size_classes_and_known_failure_share(capsys):
    valid = [name for name in CASES if not expectation_errors(CORPUS / name)]
    results = [judged(name) for name in valid]
    table = accuracy_table(results)
    wrong = [f"  {r['case']}: " + ("[known_failure] " if r["known_failure"] else "") + "; ".join(r["wrong"])
             for r in results if not r["ok"]]
    with capsys.disabled():
        print("\n\ndiagnosis accuracy on tests/samples/failures (first finding; known_failure counts as wrong)")
        print(table)
        if wrong:
            print("wrong cases:")
            print("\n".join(wrong))
    failures = [r for r in results if r["class"] != "healthy"]
    assert len(failures) >= MIN_FAILURE_CASES, f"{len(failures)} failure cases, at least {MIN_FAILURE_CASES}"
    assert len({r["class"] for r in failures}) >= MIN_FAILURE_CLASSES
    assert len(results) - len(failures) >= MIN_HEALTHY_CASES
    marked = [r["case"] for r in results if r["known_failure"]]
    assert len(marked) <= MAX_KNOWN_FAILURE_SHARE * len(results), (
        f"known_failure share {len(marked)}/{len(results)} is above {MAX_KNOWN_FAILURE_SHARE:.0%}: {', '.join(marked)}")


# The test above must be able to fail: a wrong expectation on a real case is detected.

def copy_case(tmp_path: Path, name: str, **changes) -> Path:
    case = tmp_path / name
    shutil.copytree(CORPUS / name, case)
    expected = json.loads((case / EXPECTED).read_text(encoding="utf-8"))
    expected.update(changes)
    (case / EXPECTED).write_text(json.dumps(expected), encoding="utf-8")
    return case


def any_case(predicate) -> str:
    for name in CASES:
        if not expectation_errors(CORPUS / name) and predicate(judged(name)):
            return name
    pytest.skip("no case in the corpus fits")


def test_a_wrong_code_host_or_words_is_detected(tmp_path):
    name = any_case(lambda r: r["ok"] and r["actual"]["code"] and r["class"] != "healthy")
    result = judge(copy_case(tmp_path, name, code="no_such_code", host="no-such-host",
                             cause_has=["words no verdict contains"]))
    assert not result["ok"]
    assert any("code" in w for w in result["wrong"]) and any("host" in w for w in result["wrong"])
    assert any("cause lacks" in w for w in result["wrong"])


def test_a_healthy_expectation_on_a_failure_is_detected(tmp_path):
    name = any_case(lambda r: r["ok"] and r["actual"]["code"] and r["class"] != "healthy")
    result = judge(copy_case(tmp_path, name, code=None, host=None, rank=None, cause_has=[], fix_has=[], exit=0,
                             **{"class": "healthy"}))
    assert not result["ok"] and any("expected no root cause" in w for w in result["wrong"])


def test_a_wrong_exit_code_is_detected(tmp_path):
    name = any_case(lambda r: r["ok"] and r["class"] == "healthy")
    result = judge(copy_case(tmp_path, name, exit=3))
    assert not result["ok"] and result["wrong"] == ["exit 0, expected 3"]


def test_the_accuracy_table_counts_known_failures_as_wrong():
    results = [{"class": "a", "ok": True, "known_failure": None}, {"class": "a", "ok": True, "known_failure": "x"},
               {"class": "b", "ok": False, "known_failure": None}]
    table = accuracy_table(results).splitlines()
    assert table[2].split() == ["a", "2", "1", "50%"]
    assert table[3].split() == ["b", "1", "0", "0%"]
    assert table[-1].split() == ["overall", "3", "1", "33.3%"]


@pytest.mark.parametrize("change, complaint", [
    ({"shape_from": ""}, "shape_from is empty"),
    ({"rank": "1"}, "rank must be int or NoneType"),
    ({"exit": 2}, "exit must be one of"),
    ({"surprise": 1}, "unknown key(s) surprise"),
    ({"class": "healthy", "code": "rank_exception"}, "a healthy case has code null and exit 0"),
])
def test_a_bad_expected_json_is_refused(tmp_path, change, complaint):
    case = copy_case(tmp_path, CASES[0], **change)
    assert any(complaint in error for error in expectation_errors(case))


def test_a_case_over_the_size_limit_is_refused(tmp_path):
    case = copy_case(tmp_path, CASES[0])
    (case / "big.log").write_bytes(b"x" * MAX_CASE_BYTES)
    assert any("over the" in error for error in expectation_errors(case))


def test_a_case_without_shape_from_is_refused(tmp_path):
    case = copy_case(tmp_path, CASES[0])
    expected = json.loads((case / EXPECTED).read_text(encoding="utf-8"))
    del expected["shape_from"]
    (case / EXPECTED).write_text(json.dumps(expected), encoding="utf-8")
    assert any("lacks shape_from" in error for error in expectation_errors(case))
