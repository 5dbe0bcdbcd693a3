"""inject, clear and list: a kind's steps run in a node, their undo recorded, and replayed in reverse."""

from __future__ import annotations

import random
import secrets
from datetime import UTC, datetime

from ncclkit.lab.errors import LabError
from ncclkit.lab.fault import steps, store
from ncclkit.lab.fault.kinds import KINDS, Context


def inject(lab, kind: str, node: str | None = None, seed: int | None = None) -> dict:
    """Inject fault `kind` into `node` (drawn at random when None) of a lab that is up; returns the
    record kept until `clear`: kind, node, seed, params (drawn with the seed), hook (job kinds: the
    variables to start that node's job with), undo (the steps `clear` replays)."""
    if kind not in KINDS:
        raise LabError(f"unknown fault kind {kind!r}: `ncclkit lab fault list` shows the kinds")
    spec = KINDS[kind]
    names = [info.name for info in lab.nodes()]
    seed = secrets.randbelow(2**32) if seed is None else int(seed)
    rng = random.Random(seed)
    if spec.master:
        node = names[0]   # the master is the first node (the profile's MASTER_ADDR)
    elif node is None:
        node = rng.choice(names)
    if node not in names:
        raise LabError(f"lab {lab.index} has no {node}: pick one of {', '.join(names)}")
    faults = store.read(lab)
    if any(f["kind"] == kind and f["node"] == node for f in faults):
        raise LabError(f"{kind} is already injected on {node}: run `ncclkit lab fault clear --index {lab.index}`")
    ctx = Context(lab=lab, node=node, rng=rng)
    try:
        spec.inject(ctx)
    except BaseException as error:
        _undo_all(lab, ctx.undo)   # half a fault is never left behind
        if isinstance(error, LabError):
            raise
        raise LabError(f"injecting {kind} on {node} failed: {error}") from error
    record = {"kind": kind, "node": node, "seed": seed, "params": ctx.params, "hook": ctx.hook,
              "undo": ctx.undo, "injected_at": datetime.now(UTC).isoformat(timespec="seconds")}
    store.write(lab, faults + [record])
    return record


def clear(lab) -> list[dict]:
    """Undo every fault injected into the lab, newest first; returns what was cleared."""
    faults = store.read(lab)
    problems, left = [], []
    for record in reversed(faults):
        failed = _undo_all(lab, record["undo"])
        if failed:   # kept, with only the steps still to undo, for the next `clear`
            left.insert(0, record | {"undo": [step for step, dummy in failed]})
            problems += [problem for dummy, problem in failed]
    store.write(lab, left)
    if problems:
        raise LabError(f"clearing left {len(problems)} step(s) undone; first: {problems[0]}")
    return faults


def injected(lab) -> list[dict]:
    return store.read(lab)


def _undo_all(lab, undo: list[dict]) -> list[tuple[dict, str]]:
    """Undo steps newest first; the (step, problem) pairs that failed, in their original order."""
    failed = []
    for step in reversed(undo):
        try:
            steps.undo(lab, step)
        except LabError as error:
            failed.insert(0, (step, str(error)))
    return failed
