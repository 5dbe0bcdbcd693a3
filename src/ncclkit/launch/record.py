"""The run folder, `ncclkit-report/<UTC>-launch/` (0700): one log per host (`<host>.log`, 0600, the
host's launcher output as it came), `forensics.log` and Flight Recorder dumps when a stall was
examined, and `launch.json`, the record (hosts, ranks, pids, exit codes, timings, findings, verdict).

No secret value is written: an environment value whose name looks secret (common/secret_names.py)
is masked, and so is a script argument `--name=value` / `--name value` / `NAME=value` whose name does.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

from ansible_collections.ncclkit.cluster.plugins.module_utils.common.secret_names import secret_names as _secret_names

MASK = "***"
RECORD = "launch.json"
_OPTION = re.compile(r"^(?P<dashes>-{1,2})(?P<name>[A-Za-z][\w-]*)(?:=(?P<value>.*))?$")
_ASSIGN = re.compile(r"^(?P<name>[A-Za-z_]\w*)=(?P<value>.*)$")


def looks_secret(name: str) -> bool:
    return bool(_secret_names([name.replace("-", "_")]))


def mask_env(env: dict) -> dict:
    return {key: MASK if looks_secret(key) else value for key, value in env.items()}


def mask_argv(argv: list[str]) -> list[str]:
    masked, hide_next = [], False
    for arg in argv:
        if hide_next:
            masked.append(MASK)
            hide_next = False
            continue
        option, assign = _OPTION.match(arg), _ASSIGN.match(arg)
        if option and looks_secret(option.group("name")):
            if option.group("value") is None:
                hide_next = True
                masked.append(arg)
            else:
                masked.append(f"{option.group('dashes')}{option.group('name')}={MASK}")
        elif assign and looks_secret(assign.group("name")):
            masked.append(f"{assign.group('name')}={MASK}")
        else:
            masked.append(arg)
    return masked


def make_run_folder(parent: Path) -> Path:
    """A fresh `<UTC>-launch` folder (0700) under `parent`."""
    parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-launch"
    for number in range(1, 1000):
        folder = parent / (stamp if number == 1 else f"{stamp}-{number}")
        try:
            folder.mkdir(mode=0o700)
            return folder.resolve()
        except FileExistsError:
            continue
    raise FileExistsError(f"no free run folder name in {parent}")


def private_file(path: Path, mode: str = "ab"):
    """A file only the owner can read (created 0600)."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if "a" in mode else os.O_TRUNC)
    return os.fdopen(os.open(path, flags, 0o600), mode)


def write_record(folder: Path, record: dict) -> Path:
    """launch.json, written whole (a temporary file renamed): never half a record."""
    path = folder / RECORD
    temporary = folder / (RECORD + ".tmp")
    with private_file(temporary, "w") as handle:
        json.dump(record, handle, indent=2, default=str)
        handle.write("\n")
    temporary.replace(path)
    return path


def read_record(run: str | Path, parent: Path) -> tuple[Path, dict]:
    """A run folder (path, or name under `parent`) and its launch.json; ValueError naming the fix."""
    folder = Path(run)
    if not (folder / RECORD).is_file():
        folder = parent / str(run)
    if not (folder / RECORD).is_file():
        raise ValueError(f"{run}: no {RECORD} there: give the run folder `ncclkit launch` printed "
                         f"(e.g. {parent}/<UTC>-launch)")
    try:
        return folder, json.loads((folder / RECORD).read_text())
    except ValueError as error:
        raise ValueError(f"{folder / RECORD} does not parse ({error}): the record is damaged") from None
