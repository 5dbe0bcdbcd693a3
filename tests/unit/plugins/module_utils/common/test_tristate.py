"""common.tristate: every word a tri-state variable accepted before keeps its meaning, and every
tri-state variable takes every word."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.ncclkit.cluster.plugins.module_utils.common.tristate import (
    AUTO,
    OFF,
    ON,
    TristateError,
    tristate,
)
from conftest import REPO_ROOT

# What each variable accepted before the normaliser, and what each word meant.
BEFORE = {
    # nccl_validate's preflight assert: auto and the bool filter's words, as strings or YAML booleans.
    "nccl_validate_gloo": {"auto": AUTO, "true": ON, "false": OFF, "yes": ON, "no": OFF, "on": ON, "off": OFF,
                           "1": ON, "0": OFF, True: ON, False: OFF},
    "nccl_validate_find_slow": {"auto": AUTO, "true": ON, "yes": ON, "on": ON, "1": ON, "false": OFF, True: ON,
                                False: OFF},
    # argument_specs choices [auto, required, disabled].
    "nccl_profile_rdma": {"auto": AUTO, "required": ON, "disabled": OFF},
    "nccl_tests_mpi": {"auto": AUTO, "required": ON, "disabled": OFF},
    # argument_specs choices [auto, "true", "false"].
    "cloud_alibaba_jumbo_frames": {"auto": AUTO, "true": ON, "false": OFF},
}


@pytest.mark.parametrize(("variable", "word", "meaning"),
                         [(variable, word, meaning) for variable, words in BEFORE.items()
                          for word, meaning in words.items()])
def test_every_word_accepted_before_keeps_its_meaning(variable, word, meaning):
    assert tristate(word, variable) == meaning


@pytest.mark.parametrize("word", ["AUTO", " Auto ", "TRUE", "Yes", "REQUIRED", "Disabled", "Off"])
def test_case_and_spaces_do_not_matter(word):
    assert tristate(word, "x") in (AUTO, ON, OFF)


@pytest.mark.parametrize(("value", "meaning"), [(1, ON), (0, OFF), (True, ON), (False, OFF)])
def test_yaml_and_json_values(value, meaning):
    assert tristate(value, "x") == meaning


@pytest.mark.parametrize("value", ["maybe", "", None, 2, 1.5, ["auto"], "enabled"])
def test_any_other_value_is_one_line_naming_the_variable_and_the_words(value):
    with pytest.raises(TristateError) as error:
        tristate(value, "nccl_profile_rdma")
    message = str(error.value)
    assert message.startswith("nccl_profile_rdma is ") and "auto" in message and "required" in message
    assert "\n" not in message


def _specs():
    for path in sorted((REPO_ROOT / "roles").glob("*/meta/argument_specs.yml")):
        yield path.parts[-3], yaml.safe_load(Path(path).read_text())["argument_specs"]["main"]["options"]


def test_the_tristate_variables_take_every_word():
    # A `choices` list on a tri-state variable would refuse true/false (or required/disabled) before
    # the normaliser sees them: these take any value, and the normaliser names a bad one.
    options = {name: spec for dummy, found in _specs() for name, spec in found.items()}
    for name in ("nccl_validate_gloo", "nccl_validate_find_slow", "nccl_profile_rdma", "nccl_tests_mpi"):
        assert options[name]["type"] == "raw" and "choices" not in options[name], name
        assert tristate(options[name]["default"], name) == AUTO


def test_every_tristate_variable_of_the_roles_is_known_here():
    # A variable whose choices are a tri-state vocabulary, or a raw one defaulting to auto with
    # words true/false, belongs in BEFORE (and goes through the normaliser).
    vocabularies = ({"auto", "required", "disabled"}, {"auto", "true", "false"})
    found = {name for dummy, options in _specs() for name, spec in options.items()
             if set(map(str, spec.get("choices") or [])) in vocabularies}
    assert found <= set(BEFORE), found - set(BEFORE)
