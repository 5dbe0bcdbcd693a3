"""Booleans given as strings work everywhere: `-e nccl_validate_json=false` arrives as the string
"false", which Ansible's argument spec accepts for a `type: bool` option but which is truthy in
Jinja (and an error in a 2.19 conditional). So every expression that reads a bool option of a role
reads it through `| bool` (or compares it as text); this test finds any that does not."""

import re
from pathlib import Path

import pytest
import yaml

from conftest import REPO_ROOT

ROLES = sorted(p.parent.parent for p in (REPO_ROOT / "roles").glob("*/meta/argument_specs.yml"))
# Task keywords whose value is a bare Jinja expression (or a list of them).
CONDITION_KEYS = {"when", "changed_when", "failed_when", "until", "that"}
JINJA_BLOCK = re.compile(r"\{\{(.*?)\}\}|\{%(.*?)%\}", re.S)
STRING_LITERAL = re.compile(r"'[^']*'|\"[^\"]*\"")


def bool_options(role: Path) -> list[str]:
    spec = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())
    return sorted(name for name, option in spec["argument_specs"]["main"]["options"].items()
                  if option.get("type") == "bool")


def expressions(data, key=None):
    """Every Jinja expression in loaded YAML: condition keywords whole, other strings' blocks."""
    if isinstance(data, dict):
        for name, value in data.items():
            yield from expressions(value, name)
    elif isinstance(data, list):
        for item in data:
            yield from expressions(item, key)
    elif isinstance(data, str):
        if key in CONDITION_KEYS:
            yield data
        yield from template_expressions(data)


def template_expressions(text: str):
    for match in JINJA_BLOCK.finditer(text):
        yield match.group(1) if match.group(1) is not None else match.group(2)


def bare_uses(expression: str, names) -> list[str]:
    """The names read without `| bool` (or `| string`, compared as text); names inside string
    literals are prose, not reads."""
    code = STRING_LITERAL.sub("''", expression)
    return [name for name in names if re.search(rf"\b{name}\b(?!\s*\|\s*(bool|string)\b)", code)]


def role_expressions(role: Path):
    for folder in ("tasks", "handlers", "vars", "templates"):
        for path in sorted((role / folder).rglob("*")):
            if path.suffix in (".yml", ".yaml"):
                found = expressions(yaml.safe_load(path.read_text()))
            elif path.suffix == ".j2":
                found = template_expressions(path.read_text())
            else:
                continue
            for expression in found:
                yield path.relative_to(REPO_ROOT), expression


def test_the_check_finds_a_bare_use():
    tasks = yaml.safe_load("""
    - ansible.builtin.debug: {msg: "{{ 'nccl_x_on is prose' if nccl_x_on | bool else '' }}"}
      when: nccl_x_on and nccl_x_other | bool
    """)
    found = [bare_uses(expression, ["nccl_x_on", "nccl_x_other"]) for expression in expressions(tasks)]
    assert found == [[], ["nccl_x_on"]]
    assert bare_uses("{% if nccl_x_on %}", ["nccl_x_on"]) == ["nccl_x_on"]


def test_roles_declare_bool_options():
    # The check below would pass vacuously if no role typed its booleans.
    assert sum(len(bool_options(role)) for role in ROLES) >= 10


@pytest.mark.parametrize("role", ROLES, ids=lambda role: role.name)
def test_bool_options_are_read_through_bool(role):
    names = bool_options(role)
    bare = [f"{path}: {' '.join(expression.split())[:160]} (reads {', '.join(uses)})"
            for path, expression in role_expressions(role)
            for uses in [bare_uses(expression, names)] if uses]
    assert not bare, "read these through `| bool`, a string 'false' is truthy:\n" + "\n".join(bare)
