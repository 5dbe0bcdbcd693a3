"""The modules' shared `attributes` documentation comes from one doc fragment
(plugins/doc_fragments/attributes.py): each module extends it and states its own support for check
mode and diff mode; the descriptions and the platform are the fragment's, as ansible-doc shows them."""

import json
import os
import subprocess
import sys

import yaml

from ansible_collections.ncclkit.cluster.plugins.doc_fragments.attributes import ModuleDocFragment
from conftest import REPO_ROOT

MODULES = sorted(path.stem for path in (REPO_ROOT / "plugins" / "modules").glob("*.py") if path.stem != "__init__")
# The cloud modules and nccl_diagnose move to the fragment with their own rework (issue 24's clouds
# and diagnosis parts); until then they describe their attributes themselves.
OWN_DESCRIPTIONS = {"nccl_efa", "nccl_alibaba_ecs", "nccl_autodl", "nccl_aws_imds", "nccl_diagnose"}
FRAGMENT = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["attributes"]


def _docs():
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO_ROOT / "collections"))
    done = subprocess.run([sys.executable, "-m", "ansible.cli.doc", "-j", *(f"ncclkit.cluster.{m}" for m in MODULES)],
                          capture_output=True, text=True, env=env, cwd=REPO_ROOT, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return {name.rsplit(".", 1)[1]: entry["doc"] for name, entry in json.loads(done.stdout).items()}


DOCS = _docs()


def test_every_module_states_its_check_and_diff_support():
    for name, doc in DOCS.items():
        for attribute in ("check_mode",) if name in OWN_DESCRIPTIONS else ("check_mode", "diff_mode"):
            entry = doc.get("attributes", {}).get(attribute) or {}
            assert entry.get("support") in ("full", "partial", "none"), (name, attribute, entry)
            assert entry.get("description"), (name, attribute)


def test_the_modules_take_the_descriptions_and_platform_from_the_fragment():
    adopted = set(MODULES) - OWN_DESCRIPTIONS
    assert len(adopted) >= 16
    for name in adopted:
        doc = DOCS[name]
        source = (REPO_ROOT / "plugins" / "modules" / f"{name}.py").read_text()
        declared = yaml.safe_load(source.split('DOCUMENTATION = r"""', 1)[1].split('"""', 1)[0])
        assert "ncclkit.cluster.attributes" in declared.get("extends_documentation_fragment", []), name
        for attribute, shared in FRAGMENT.items():
            assert doc["attributes"][attribute]["description"] == shared["description"], (name, attribute)
        assert doc["attributes"]["platform"]["platforms"] == "posix"
        assert FRAGMENT["check_mode"]["description"] not in source, f"{name} repeats the fragment's text"
