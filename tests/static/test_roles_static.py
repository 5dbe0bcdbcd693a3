"""Static checks of every role: argument specs list exactly the defaults (typed, described, with the
same values, role-prefixed), and templates start with the ansible_managed comment."""

from pathlib import Path

import pytest
import yaml

from conftest import REPO_ROOT

ROLES = sorted(p.parent.parent for p in (REPO_ROOT / "roles").glob("*/meta/argument_specs.yml"))
TYPES = {"str": str, "bool": bool, "int": int, "float": (int, float), "list": list, "dict": dict,
         "path": str, "raw": object}


def _load(path: Path):
    return yaml.safe_load(path.read_text()) if path.exists() else None


def test_every_role_has_argument_specs():
    assert {role.name for role in ROLES} >= {
        "nccl_preflight", "nccl_network", "nccl_tests", "nccl_profile", "nccl_validate",
        "cloud_aws", "cloud_alibaba", "cloud_autodl"}


@pytest.mark.parametrize("role", ROLES, ids=lambda role: role.name)
def test_argument_specs_list_exactly_the_defaults(role):
    defaults = _load(role / "defaults" / "main.yml") or {}
    options = _load(role / "meta" / "argument_specs.yml")["argument_specs"]["main"].get("options") or {}
    assert sorted(options) == sorted(defaults)
    for name, spec in options.items():
        assert name.startswith(role.name + "_"), name
        assert spec.get("description"), name
        assert isinstance(defaults[name], TYPES[spec.get("type", "str")]), name
        assert spec.get("default") == defaults[name], name
        if "choices" in spec:
            assert defaults[name] in spec["choices"], name


@pytest.mark.parametrize("role", ROLES, ids=lambda role: role.name)
def test_templates_start_with_ansible_managed(role):
    for template in (role / "templates").glob("**/*.j2"):
        text = template.read_text()
        if text.startswith("{#"):  # a fragment included into another template
            continue
        head = text.splitlines()[:2]
        assert "{{ ansible_managed | comment }}" in head, template


def test_every_firewall_backend_has_its_commands_and_its_packages_on_every_os():
    role = REPO_ROOT / "roles" / "nccl_network"
    choices = _load(role / "meta" / "argument_specs.yml")["argument_specs"]["main"]["options"][
        "nccl_network_firewall"]["choices"]
    assert sorted(_load(role / "vars" / "main.yml")["_nccl_network_backend_commands"]) == sorted(choices)
    for os_vars in sorted((role / "vars").glob("[A-Z]*.yml")):
        assert sorted(_load(os_vars)["_nccl_network_backend_packages"]) == sorted(choices), os_vars.name
