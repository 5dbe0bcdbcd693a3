"""List the public names of a checkout of ncclkit: modules and their options, filters, role variables, facts, finding
codes, CLI verbs and options. They are the API: tests/static/test_public_names.py checks that every
name in tests/static/public_names.json (made from the commit before module_utils moved into
packages) still works.

    git worktree add /tmp/pre f923ac3
    python tools/public_names.py /tmp/pre f923ac3 > tests/static/public_names.json

ROOT is a checkout (default: this one), e.g. a `git worktree add /tmp/pre <commit>`. Everything is
read from ROOT's files without importing its collection, except the CLI parser, which is built in a
child Python with ROOT/src first on its path (so an older checkout's parser is the one read).
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import yaml

# Calls whose first argument is a finding code, in any version of the code: the finding
# constructors, the log rules, nccl-tests' gates, the network verdicts.
CODE_CALLS = ("finding", "_finding", "Rule", "_rule", "_gate", "_verdict")
CODE_SHAPE = re.compile(r"^[a-z][a-z0-9_]*[a-z0-9]$")
# A finding-code table row in docs/check.md and docs/diagnosis.md: the first cell is `code`.
DOC_CODE_ROW = re.compile(r"^\| `([a-z][a-z0-9_]+)` \|", re.M)
FACT_HEADING = re.compile(r"^### `([a-z][a-z0-9_]+)`", re.M)


def modules(root: Path) -> list:
    return sorted(path.stem for path in (root / "plugins" / "modules").glob("*.py") if path.stem != "__init__")


def module_options(root: Path) -> dict:
    """module -> the options its own DOCUMENTATION names (fragments' options are not read here)."""
    found = {}
    for path in sorted((root / "plugins" / "modules").glob("*.py")):
        for node in ast.parse(path.read_text(), str(path)).body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "DOCUMENTATION" for t in node.targets):
                found[path.stem] = sorted((yaml.safe_load(node.value.value) or {}).get("options") or {})
    return found


def filters(root: Path) -> list:
    """The keys of the dict each FilterModule.filters() returns, read from the source."""
    names = set()
    for path in (root / "plugins" / "filter").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef) and node.name == "filters":
                for inner in ast.walk(node):
                    if isinstance(inner, ast.Dict):
                        names |= {key.value for key in inner.keys
                                  if isinstance(key, ast.Constant) and isinstance(key.value, str)}
    return sorted(names)


def role_variables(root: Path) -> dict:
    """role -> the variables of defaults/main.yml and of every entry point in meta/argument_specs.yml."""
    found = {}
    for role in sorted(path for path in (root / "roles").iterdir() if path.is_dir()):
        names = set()
        defaults = role / "defaults" / "main.yml"
        if defaults.is_file():
            names |= set(yaml.safe_load(defaults.read_text()) or {})
        specs = role / "meta" / "argument_specs.yml"
        if specs.is_file():
            for entry in (yaml.safe_load(specs.read_text()) or {}).get("argument_specs", {}).values():
                names |= set(entry.get("options") or {})
        found[role.name] = sorted(names)
    return found


def facts(root: Path) -> list:
    """Every name docs/facts.md gives a section."""
    return sorted(set(FACT_HEADING.findall((root / "docs" / "facts.md").read_text())))


def documented_codes(root: Path) -> list:
    codes = set()
    for name in ("check.md", "diagnosis.md"):
        codes |= set(DOC_CODE_ROW.findall((root / "docs" / name).read_text()))
    return sorted(codes)


def code_literals(root: Path) -> list:
    """Finding codes written in the collection's Python: the first argument of a CODE_CALLS call,
    a `code=` keyword, a "code": value in a dict literal, and a string assigned to `code`."""
    codes = set()
    for path in (root / "plugins").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            codes |= _codes_in(node)
    return sorted(code for code in codes if CODE_SHAPE.match(code))


def _codes_in(node) -> set:
    found = set()
    if isinstance(node, ast.Call):
        callee = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
        if callee in CODE_CALLS and node.args:
            found |= _strings(node.args[0])
        found |= {text for keyword in node.keywords if keyword.arg == "code" for text in _strings(keyword.value)}
    elif isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values, strict=True):
            if isinstance(key, ast.Constant) and key.value == "code":
                found |= _strings(value)
    elif isinstance(node, ast.Assign):
        if any(isinstance(target, ast.Name) and target.id == "code" for target in node.targets):
            found |= _strings(node.value)
    return found


def _strings(node) -> set:
    """The string constants an expression can be: a literal, or either branch of `a if c else b`."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.IfExp):
        return _strings(node.body) | _strings(node.orelse)
    return set()


# Run in a child Python with ROOT/src first on sys.path: prints {"verb path": [option strings]}.
_CLI_WALK = """
import argparse, json
from ncclkit import cli

def walk(parser, path, out):
    out[" ".join(path)] = sorted(s for a in parser._actions for s in a.option_strings)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                walk(sub, path + [name], out)
    return out

print(json.dumps(walk(cli.build_parser(), [], {}), sort_keys=True))
"""


def cli_commands(root: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", _CLI_WALK], capture_output=True, text=True, check=False,
                          env={"PYTHONPATH": str(root / "src"), "PATH": "/usr/bin:/bin"}, cwd=root)
    if done.returncode:
        raise SystemExit(f"public_names: the CLI parser of {root} did not build: {done.stderr.strip()}")
    return json.loads(done.stdout)


def public_names(root: Path) -> dict:
    return {
        "modules": modules(root),
        "module_options": module_options(root),
        "filters": filters(root),
        "role_variables": role_variables(root),
        "facts": facts(root),
        "finding_codes": {"documented": documented_codes(root), "in_code": code_literals(root)},
        "cli": cli_commands(root),
    }


def main(argv) -> int:
    """argv: [ROOT [COMMIT]]; COMMIT, the commit ROOT is checked out at, is recorded as `_made_from`."""
    root = Path(argv[0] if argv else Path(__file__).resolve().parent.parent).resolve()
    if not (root / "galaxy.yml").is_file():
        print(f"public_names: {root} is not an ncclkit checkout (no galaxy.yml); give the checkout's folder",
              file=sys.stderr)
        return 2
    names = public_names(root)
    if len(argv) > 1:
        names["_made_from"] = f"tools/public_names.py on commit {argv[1]}"
    print(json.dumps(names, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
