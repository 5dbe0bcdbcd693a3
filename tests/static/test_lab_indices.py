"""tests/lab_indices.py is the one place lab indices are given out: no index twice, no test with an
index of its own, every user named there."""

from __future__ import annotations

import re
from collections import Counter

import pytest
import yaml
from lab_indices import LAB_INDICES, REPO_ROOT, lab_index

# A lab index written as a number where a lab is made or named for a test.
LITERAL_INDEX = re.compile(r"^\s*INDEX\s*=\s*\d+|\b(?:Lab|lab_cluster|aws_lab_cluster|lab_with_outsider)\(\s*\d+"
                           r"|--index[ =]\d+", re.M)


def test_no_index_is_given_twice():
    counts = Counter(index for indices in LAB_INDICES.values() for index in indices)
    assert [index for index, count in counts.items() if count > 1] == []


def test_indices_fit_the_lab():
    from ncclkit.lab.plan import MAX_INDEX
    assert all(0 <= index <= MAX_INDEX for indices in LAB_INDICES.values() for index in indices)


def test_no_test_writes_its_own_index():
    offenders = [f"{path.relative_to(REPO_ROOT)}: {match.group(0).strip()}"
                 for path in sorted((REPO_ROOT / "tests").rglob("*.py")) if path.name != "lab_indices.py"
                 for match in LITERAL_INDEX.finditer(path.read_text())]
    assert offenders == [], "take the index from tests/lab_indices.py: INDEX = lab_index(__file__)"


def test_every_module_that_takes_an_index_is_allocated():
    takers = [path.relative_to(REPO_ROOT).as_posix() for path in (REPO_ROOT / "tests").rglob("*.py")
              if re.search(r"^INDEX = lab_index\(__file__\)", path.read_text(), re.M)]
    assert takers and sorted(set(takers) - set(LAB_INDICES)) == []
    assert lab_index(str(REPO_ROOT / "tests/lab/test_network_lab.py")) == 20


def test_a_module_missing_from_the_table_is_refused():
    with pytest.raises(KeyError, match="tests/unit/nowhere.py has no lab index: add it to tests/lab_indices.py"):
        lab_index(str(REPO_ROOT / "tests/unit/nowhere.py"))


@pytest.mark.parametrize("scenario", ["default", "network"])
def test_molecule_scenarios_use_their_index(scenario):
    path = f"molecule/{scenario}/molecule.yml"
    env = yaml.safe_load((REPO_ROOT / path).read_text())["provisioner"]["env"]
    assert int(env["NCCLKIT_LAB_INDEX"]) == LAB_INDICES[path][0]
