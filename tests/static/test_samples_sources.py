"""Every fixture under tests/samples names where it comes from: text fixtures in their first line
(`# source: URL or the command that recorded it, with the date` or `# recorded DATE ... by
COMMAND`), the formats that cannot hold a comment in tests/samples/SOURCES.md, and the diagnosis
corpus's cases (tests/samples/failures/<case>/, logs read whole) in their expected.json's `shape_from`."""

import json
import re

import pytest

from conftest import SAMPLES

FAILURES = SAMPLES / "failures"
_OUTSIDE_CORPUS = [p for p in SAMPLES.rglob("*") if FAILURES not in p.parents]
TEXT = sorted(p for p in _OUTSIDE_CORPUS if p.suffix in (".txt", ".log"))
OTHER = sorted(p for p in _OUTSIDE_CORPUS if p.is_file() and p.suffix not in (".txt", ".log")
               and p.name != "SOURCES.md")
CASES = sorted(p for p in FAILURES.iterdir() if p.is_dir())
RECORDED_ON_LAB = ("lab: ncclkit lab fault", "lab: healthy run of benchmarks/fault_job.py")
SOURCES = (SAMPLES / "SOURCES.md").read_text()
# A URL, a repository reference, or a recording: a date and the command.
_NAMES_ORIGIN = re.compile(r"https?://\S+|github:\S+|public GitHub file|code-index id|"
                           r"(?=.*\b20\d\d-\d\d-\d\d\b).*(?:by |: ).*\S")


def source_line_problem(first: str):
    """Why a first line does not name a source, or None."""
    if not (first.startswith("# source:") or first.startswith("# recorded ")):
        return "does not start with '# source:' or '# recorded '"
    if not _NAMES_ORIGIN.search(first):
        return "names no URL, and no date with the command that recorded it"
    return None


@pytest.mark.parametrize("path", TEXT, ids=lambda p: str(p.relative_to(SAMPLES)))
def test_text_fixture_names_its_source_first(path):
    first = path.read_text(errors="replace").split("\n", 1)[0]
    assert source_line_problem(first) is None, f"{path.name}: {source_line_problem(first)}"


@pytest.mark.parametrize("path", OTHER, ids=lambda p: str(p.relative_to(SAMPLES)))
def test_other_fixture_is_listed_with_its_source(path):
    assert path.name in SOURCES


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_a_corpus_case_names_where_its_shape_comes_from(case):
    expected = json.loads((case / "expected.json").read_text())
    origin = expected.get("shape_from", "")
    # "lab: ncclkit lab fault inject KIND ..." and "lab: healthy run ...": recordings of benchmarks/fault_matrix.py
    # (SOURCES.md).
    assert _NAMES_ORIGIN.search(origin) or "written here" in origin or origin.startswith(RECORDED_ON_LAB), \
        f"{case.name}: shape_from names no thread URL, recording or 'written here'"


@pytest.mark.parametrize("first", [
    "# nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809",
    "ncclkit-check rank=0 host=node0: starting",
    "# source: somewhere",
    "# recorded on a GPU",
])
def test_a_fixture_without_a_source_line_is_rejected(first):
    assert source_line_problem(first) is not None


@pytest.mark.parametrize("first", [
    "# source: https://github.com/NVIDIA/nccl/issues/1597 (excerpt)",
    "# recorded 2026-12-04 on one H200 by benchmarks/h200_stuck_rank.sh (STOP to rank 1)",
    "# source: recorded 2026-12-02 on one NVIDIA H200: ./build/all_reduce_perf -b 8 -e 1G",
])
def test_a_source_line_is_accepted(first):
    assert source_line_problem(first) is None
