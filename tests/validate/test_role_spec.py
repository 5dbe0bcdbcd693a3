"""nccl_validate's argument spec lists exactly its defaults, typed, with the same values."""

from pathlib import Path

import yaml

ROLE = Path(__file__).resolve().parents[2] / "roles" / "nccl_validate"
TYPES = {"str": str, "int": int, "float": (int, float), "bool": bool, "dict": dict, "list": list}


def test_every_default_is_specified_with_its_value_and_type():
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    options = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
    assert set(defaults) == set(options)
    for name, value in defaults.items():
        assert name.startswith("nccl_validate_")
        assert options[name]["default"] == value, name
        assert isinstance(value, TYPES[options[name]["type"]]), name
        assert options[name]["description"], name
