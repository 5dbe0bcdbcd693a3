"""`ncclkit lab fault`: break a lab cluster the way real clusters break, and put it back.

Each part has one job:

- kinds: the table of fault kinds (what each breaks, its expected effect on a job, the finding
  `ncclkit check` should raise and the code `ncclkit diagnose` should put first) and their inject steps.
- steps: the primitives a kind is made of (a rule in the node's own `inet filter` table, `ip link`,
  `tc`, a route, an edited file, a process, a mount, a limit, a cgroup); each returns the step
  that undoes it, as data.
- store: what was injected, and how to undo it, under the lab's state dir.
- manager: inject (parameters drawn at random, recorded), clear (undo in reverse), list.

Lab only, root only. Product code (check, diagnose, launch, the collection) never reads anything
written here: tests/static/test_fault_isolation.py fails when it refers to this package.
"""

from ncclkit.lab.fault.kinds import KINDS, FaultKind
from ncclkit.lab.fault.manager import clear, inject, injected

__all__ = ["KINDS", "FaultKind", "clear", "inject", "injected"]
