"""docs/facts.md stays the true contract of the facts the roles hand forward: every ncclkit_* name
the product uses is listed there, each fact a role or a module sets is credited to it, every
role fact read outside its role is listed, and no set_fact key is a template that hides a name
from ansible-lint."""

import ast
import re

import pytest
import yaml

from conftest import REPO_ROOT

DOC_PATH = REPO_ROOT / "docs" / "facts.md"
DOC = DOC_PATH.read_text()
# A name with the collection's prefix; "_ncclkit_x" (a play's internal variable) and
# "ncclkit_cluster_*" (a wildcard in prose) are not names.
NCCLKIT_NAME = re.compile(r"\bncclkit_[a-z0-9_]*[a-z0-9]\b")
ROLES = sorted(path.name for path in (REPO_ROOT / "roles").iterdir() if (path / "tasks").is_dir())
SET_FACT = ("ansible.builtin.set_fact", "set_fact")
MODULE_UTILS_IMPORT = re.compile(r"ansible_collections\.ncclkit\.cluster\.plugins\.module_utils\.([\w.]+)")


def _doc_entries():
    """{name: the entry's text} for every `### `name`` heading of docs/facts.md."""
    parts = re.split(r"^### `([a-z0-9_]+)`\n", DOC, flags=re.MULTILINE)
    pairs = zip(parts[1::2], parts[2::2], strict=True)
    return {name: re.split(r"^## ", body, flags=re.MULTILINE)[0] for name, body in pairs}


def _set_by(entry):
    found = re.search(r"^- \*\*Set by\*\*:(.*?)(?=^- \*\*|\Z)", entry, flags=re.MULTILINE | re.DOTALL)
    return " ".join(found.group(1).split()) if found else ""


def _not_facts():
    section = DOC.split("## Other `ncclkit_` names", 1)
    return set(re.findall(r"^- `(ncclkit_[a-z0-9_]+)`", section[1], flags=re.MULTILINE)) if len(section) == 2 else set()


ENTRIES = _doc_entries()
NOT_FACTS = _not_facts()


def _product_files(with_docs=True):
    """What a user runs or reads: roles, playbooks, plugins, the Python package, scenarios, docs."""
    trees = ["roles", "playbooks", "plugins", "src/ncclkit", "molecule", "inventories", "examples"]
    trees += ["docs"] if with_docs else []
    files = [REPO_ROOT / "site.yml"] + ([REPO_ROOT / "README.md"] if with_docs else [])
    for tree in trees:
        files += [path for path in (REPO_ROOT / tree).rglob("*") if path.is_file()
                  and path.suffix in (".yml", ".yaml", ".j2", ".py", ".md", ".cfg", ".sh", "")]
    return [path for path in files if path != DOC_PATH and "__pycache__" not in path.parts]


def _names_in_product(with_docs=True):
    """{ncclkit_* name: [where]} over the product's files."""
    names = {}
    for path in _product_files(with_docs):
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for name in NCCLKIT_NAME.findall(line):
                names.setdefault(name, []).append(f"{path.relative_to(REPO_ROOT)}:{number}")
    return names


def _tasks(node):
    """Every mapping in a loaded task file or playbook (tasks nest in blocks and plays)."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _tasks(value)
    elif isinstance(node, list):
        for item in node:
            yield from _tasks(item)


def _set_fact_keys():
    """[(owner, file, key)] for every set_fact key in the roles and playbooks; owner is the role."""
    found = []
    paths = [(path, path.relative_to(REPO_ROOT / "roles").parts[0])
             for path in (REPO_ROOT / "roles").glob("*/*/*.yml")
             if path.parent.name in ("tasks", "handlers")]
    paths += [(path, "playbooks") for path in (REPO_ROOT / "playbooks").glob("*.yml")]
    for path, owner in paths:
        for task in _tasks(yaml.safe_load(path.read_text())):
            for action in SET_FACT:
                if isinstance(task.get(action), dict):
                    found += [(owner, path.relative_to(REPO_ROOT), key) for key in task[action]
                              if key != "cacheable"]
    return found


def _fact_keys_in(source):
    """The ncclkit_* keys a Python file puts into a dict: {"ncclkit_x": ...} or facts["ncclkit_x"] = ..."""
    keys = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Dict):
            keys |= {key.value for key in node.keys if isinstance(key, ast.Constant)
                     and isinstance(key.value, str) and key.value.startswith("ncclkit_")}
        elif isinstance(node, ast.Assign):
            keys |= {target.slice.value for target in node.targets if isinstance(target, ast.Subscript)
                     and isinstance(target.slice, ast.Constant) and isinstance(target.slice.value, str)
                     and target.slice.value.startswith("ncclkit_")}
    return keys


def _module_facts():
    """{module: ncclkit_* keys it builds, itself or in the module_utils it imports}."""
    facts = {}
    utils = REPO_ROOT / "plugins" / "module_utils"
    for path in sorted((REPO_ROOT / "plugins" / "modules").glob("*.py")):
        source = path.read_text()
        keys = _fact_keys_in(source)
        for name in set(MODULE_UTILS_IMPORT.findall(source)):
            part = utils.joinpath(*name.split("."))
            for util in (part.with_suffix(".py"), part / "__init__.py"):
                if util.exists():
                    keys |= _fact_keys_in(util.read_text())
        if keys:
            facts[path.stem] = keys
    return facts


def _defaults(role):
    path = REPO_ROOT / "roles" / role / "defaults" / "main.yml"
    return set(yaml.safe_load(path.read_text()) or {}) if path.exists() else set()


def _cross_role_reads():
    """{(role fact, reader)} where a role or playbook names another role's variable that is not
    one of that role's defaults: a fact read outside the role that sets it."""
    owners = sorted(ROLES, key=len, reverse=True)
    defaults = {role: _defaults(role) for role in ROLES}
    # Not after a dot (ncclkit.cluster.nccl_profile_env is a filter) or an underscore (internal).
    alternatives = "|".join(map(re.escape, owners))
    pattern = re.compile(rf"(?<![.\w])((?:{alternatives})_[a-z0-9_]*[a-z0-9])\b")
    files = [(path, path.relative_to(REPO_ROOT / "roles").parts[0])
             for path in (REPO_ROOT / "roles").rglob("*") if path.is_file()]
    files += [(path, "playbooks") for path in (REPO_ROOT / "playbooks").glob("*.yml")]
    reads = set()
    for path, reader in files:
        for name in pattern.findall(path.read_text(errors="replace")):
            owner = next(role for role in owners if name.startswith(role + "_"))
            if owner != reader and name not in defaults[owner]:
                reads.add((name, reader))
    return reads


def test_the_doc_lists_the_facts_the_roles_hand_forward():
    # Guards the parsing itself: an empty parse would make every test below pass.
    assert {"ncclkit_container", "ncclkit_cluster_ip", "ncclkit_network", "ncclkit_launch",
            "nccl_preflight_nics"} <= set(ENTRIES)
    assert "ncclkit_kept" in NOT_FACTS
    assert all(_set_by(entry) for entry in ENTRIES.values()), "an entry without its Set by line"


def test_every_ncclkit_name_in_the_product_is_in_the_doc():
    unlisted = {name: where[:3] for name, where in _names_in_product().items()
                if name not in ENTRIES and name not in NOT_FACTS}
    assert not unlisted, f"ncclkit_* names missing from docs/facts.md: {unlisted}"


def test_every_entry_of_the_doc_is_still_used():
    used = set(_names_in_product(with_docs=False))
    stale = sorted(name for name in set(ENTRIES) | NOT_FACTS if name.startswith("ncclkit_") and name not in used)
    assert not stale, f"docs/facts.md lists names no code uses any more: {stale}"


def test_no_set_fact_key_is_a_template():
    templated = [f"{path}: {key}" for dummy, path, key in _set_fact_keys() if "{{" in key or "{%" in key]
    assert not templated, ("set_fact keys written as templates (use the plain key and "
                           f"# noqa: var-naming[no-role-prefix] on the task's name): {templated}")


def test_every_ncclkit_fact_a_role_sets_is_credited_to_that_role():
    keys = [(owner, path, key) for owner, path, key in _set_fact_keys() if key.startswith("ncclkit_")]
    assert keys, "no role sets an ncclkit_* fact: the search is broken"
    uncredited = [f"{path}: {key}" for owner, path, key in keys
                  if key not in ENTRIES or owner not in _set_by(ENTRIES[key])]
    assert not uncredited, f"docs/facts.md does not say these roles set these facts: {uncredited}"


def test_every_ncclkit_fact_a_module_returns_is_credited_to_that_module():
    facts = _module_facts()
    assert "nccl_host_survey" in facts and "ncclkit_container" in facts["nccl_host_survey"]
    uncredited = [f"{module}: {key}" for module, keys in facts.items() for key in sorted(keys)
                  if key not in ENTRIES or f"`{module}`" not in _set_by(ENTRIES[key])]
    assert not uncredited, f"docs/facts.md does not say these modules set these facts: {uncredited}"


def test_every_role_fact_read_outside_its_role_is_in_the_doc():
    reads = _cross_role_reads()
    assert ("nccl_preflight_gpus", "nccl_validate") in reads
    missing = sorted(f"{name} (read by {reader})" for name, reader in reads if name not in ENTRIES)
    assert not missing, f"role facts read by another role, missing from docs/facts.md: {missing}"


@pytest.mark.parametrize("name", sorted(name for name in ENTRIES if not name.startswith("ncclkit_")))
def test_every_role_fact_in_the_doc_is_read_outside_its_role(name):
    assert name in {read for read, dummy in _cross_role_reads()}, f"{name} is read only inside its role"
