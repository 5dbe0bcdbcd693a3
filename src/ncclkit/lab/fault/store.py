"""What `lab fault inject` did, kept in the lab's state dir (fault/faults.json, root only) until `clear`."""

from __future__ import annotations

import json
import shutil

from ncclkit.lab.errors import LabError
from ncclkit.lab.state import write_atomically


def path(lab):
    return lab.state_dir.path / "fault" / "faults.json"


def read(lab) -> list[dict]:
    try:
        return json.loads(path(lab).read_text())
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as error:
        raise LabError(f"cannot read {path(lab)}: {error}") from error


def write(lab, faults: list[dict]) -> None:
    if not faults:
        shutil.rmtree(path(lab).parent, ignore_errors=True)   # the stash goes with the last fault
        return
    write_atomically(path(lab), json.dumps(faults, indent=2) + "\n", mode=0o600)
