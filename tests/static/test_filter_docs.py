"""Every filter plugin is documented: `ansible-doc -t filter ncclkit.cluster.NAME` shows a
description, examples that use it, its return value, and exactly the options its Python takes.
The rule (docs/development.md, Filter documentation): one YAML file per filter, named after it,
beside the filter files; no filter file carries DOCUMENTATION, and no YAML documents a filter
that does not exist."""

import ast
import importlib
import inspect
import json
import os
import subprocess
import sys

import pytest
import yaml

from conftest import REPO_ROOT

FILTER_DIR = REPO_ROOT / "plugins" / "filter"


def _filters():
    """{name: function} from every FilterModule under plugins/filter."""
    found = {}
    for path in sorted(FILTER_DIR.glob("*.py")):
        module = importlib.import_module(f"ansible_collections.ncclkit.cluster.plugins.filter.{path.stem}")
        found.update(module.FilterModule().filters())
    return found


FILTERS = _filters()


@pytest.fixture(scope="module")
def docs():
    """One ansible-doc run for every filter (a run per filter would cost a second each)."""
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO_ROOT / "ansible.cfg"))
    names = [f"ncclkit.cluster.{name}" for name in sorted(FILTERS)]
    ansible_doc = os.path.join(os.path.dirname(sys.executable), "ansible-doc")
    run = subprocess.run([ansible_doc, "-t", "filter", "--json", *names], cwd=REPO_ROOT, env=env,
                         capture_output=True, text=True, check=False, timeout=120)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_filters_are_found():
    # The files of several filters each; a FilterModule that stopped loading would shrink this.
    assert len(FILTERS) >= 30
    assert {"nccl_profile_env", "safe_name", "combined_run", "reachability_report"} <= set(FILTERS)


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_filter_is_documented(docs, name):
    entry = docs.get(f"ncclkit.cluster.{name}")
    assert entry, f"ansible-doc shows nothing for {name}"
    doc = entry["doc"]
    assert doc["name"] == name
    assert doc.get("short_description") and doc.get("description")
    assert f"ncclkit.cluster.{name}" in (entry.get("examples") or ""), "an example that uses the filter"
    assert (entry.get("return") or {}).get("_value", {}).get("description")
    options = doc.get("options") or {}
    assert "_input" in options and options["_input"].get("description")
    # The documented options are the function's arguments after the piped-in value, by name.
    parameters = list(inspect.signature(FILTERS[name]).parameters)[1:]
    assert sorted(set(options) - {"_input"}) == sorted(parameters)
    for parameter in parameters:
        assert options[parameter].get("description"), parameter


@pytest.mark.parametrize("path", sorted(FILTER_DIR.glob("*.yml")), ids=lambda path: path.name)
def test_every_doc_has_its_filter(path):
    documented = (yaml.safe_load(path.read_text()) or {}).get("DOCUMENTATION") or {}
    assert documented.get("name") == path.stem, f"{path.name} documents {documented.get('name')!r}, not {path.stem}"
    assert path.stem in FILTERS, f"{path.name} documents no filter: delete it, or add the filter it describes"


@pytest.mark.parametrize("path", sorted(FILTER_DIR.glob("*.py")), ids=lambda path: path.name)
def test_no_filter_file_documents_inline(path):
    # ansible-doc reads a file's DOCUMENTATION as the doc of one filter only: the YAML files carry them all.
    names = {node.targets[0].id for node in ast.parse(path.read_text()).body
             if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)}
    assert not names & {"DOCUMENTATION", "EXAMPLES", "RETURN"}, f"{path.name}: move its docs to <filter>.yml"
