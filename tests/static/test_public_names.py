"""Every public name of the commit before module_utils moved into packages still works:
tests/static/public_names.json (made by tools/public_names.py from that commit) against this checkout.
Module names, filter names, role variables, facts, finding codes and CLI verbs/options are the API:
they may be added to, never renamed or removed."""

import argparse
import importlib
import importlib.util
import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from conftest import REPO_ROOT
from ncclkit import cli

OLD = json.loads((REPO_ROOT / "tests" / "static" / "public_names.json").read_text())
_spec = importlib.util.spec_from_file_location("public_names", REPO_ROOT / "tools" / "public_names.py")
public_names = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(public_names)


@pytest.mark.parametrize("name", OLD["modules"])
def test_module_imports_and_is_documented(name):
    module = importlib.import_module(f"ansible_collections.ncclkit.cluster.plugins.modules.{name}")
    doc = yaml.safe_load(module.DOCUMENTATION)
    assert doc["module"] == name
    assert doc.get("short_description") and callable(module.main)


def test_module_options_are_documented_as_ansible_doc_shows_them():
    """Each module's options as ansible-doc resolves them (doc fragments included) keep every old one."""
    names = [f"ncclkit.cluster.{name}" for name in OLD["module_options"]]
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO_ROOT / "collections"))
    done = subprocess.run([sys.executable, "-m", "ansible.cli.doc", "-j", *names], capture_output=True, text=True,
                          env=env, cwd=REPO_ROOT, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    docs = json.loads(done.stdout)
    missing = {name: sorted(set(options) - set(docs[f"ncclkit.cluster.{name}"]["doc"].get("options") or {}))
               for name, options in OLD["module_options"].items()}
    assert not {name: options for name, options in missing.items() if options}


def _filters_now():
    """name -> function, as Ansible resolves them: every plugins/filter/*.py's FilterModule.filters()."""
    found = {}
    for path in sorted((REPO_ROOT / "plugins" / "filter").glob("*.py")):
        plugin = importlib.import_module(f"ansible_collections.ncclkit.cluster.plugins.filter.{path.stem}")
        found.update(plugin.FilterModule().filters())
    return found


FILTERS_NOW = _filters_now()


@pytest.mark.parametrize("name", OLD["filters"])
def test_filter_resolves(name):
    assert callable(FILTERS_NOW.get(name)), f"filter {name} is gone from plugins/filter/"


def test_role_variables_are_in_defaults_or_argument_specs():
    now = public_names.role_variables(REPO_ROOT)
    missing = {role: sorted(set(names) - set(now.get(role, ()))) for role, names in OLD["role_variables"].items()}
    assert not {role: names for role, names in missing.items() if names}


def test_facts_are_documented_and_used():
    documented = set(public_names.facts(REPO_ROOT))
    assert set(OLD["facts"]) <= documented, set(OLD["facts"]) - documented
    folders = ("roles", "plugins", "src", "inventories", "playbooks", "molecule")
    suffixes = (".yml", ".yaml", ".py", ".j2", ".md")
    used = "\n".join(path.read_text(errors="replace") for folder in folders
                     for path in (REPO_ROOT / folder).rglob("*") if path.is_file() and path.suffix in suffixes)
    unused = [name for name in OLD["facts"] if not re.search(rf"\b{name}\b", used)]
    assert not unused, f"documented, but nothing sets or reads them: {unused}"


def test_finding_codes_are_documented_or_emitted():
    now = set(public_names.documented_codes(REPO_ROOT)) | set(public_names.code_literals(REPO_ROOT))
    old = set(OLD["finding_codes"]["documented"]) | set(OLD["finding_codes"]["in_code"])
    assert old <= now, old - now
    assert set(OLD["finding_codes"]["documented"]) <= set(public_names.documented_codes(REPO_ROOT))


def _parsers():
    found = {}

    def walk(parser, path):
        found[" ".join(path)] = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, [*path, name])

    walk(cli.build_parser(), [])
    return found


PARSERS = _parsers()


@pytest.mark.parametrize("verb", sorted(OLD["cli"]))
def test_cli_verb_and_options_parse(verb, capsys):
    parser = PARSERS.get(verb)
    assert parser is not None, f"`ncclkit {verb}` is gone"
    options = {option for action in parser._actions for option in action.option_strings}
    assert set(OLD["cli"][verb]) <= options, set(OLD["cli"][verb]) - options
    with pytest.raises(SystemExit) as stop:     # the verb parses as a command line
        cli.build_parser().parse_args([*verb.split(), "--help"])
    assert stop.value.code == 0 and "usage: ncclkit" in capsys.readouterr().out


def test_the_list_is_the_pre_move_commits():
    """The committed list is made by the tool, not by hand: the tool reads this checkout's names the
    same way, and every kind it records is in the list."""
    now = public_names.public_names(REPO_ROOT)
    assert set(now) <= set(OLD)
    assert OLD["_made_from"].endswith("f923ac3") and len(OLD["modules"]) >= 20 and len(OLD["filters"]) >= 50
