"""Is the job making progress? From samples of what every rank does (hostside `S` records): the
process state, the main thread's Python stack (py-spy), CPU time and storage I/O.

A rank moves between two samples when it is not stopped (T, t, Z) and its main thread's stack
changed, or it read or wrote storage (a checkpoint), or, with no stack to compare, its main thread
used CPU. A rank whose stack stays put while its main thread uses CPU is *busy*: a training loop
sampled at the same line every time (a step that spends its time in one call) looks like that, and
so do NCCL's wait and a CUDA call queued behind an NCCL kernel that waits, which spin. So CPU with
the stack put counts only outside a collective, and only while not every other rank is stopped or
waits in one: the job stalls when no rank moved for `stall_after` seconds after every rank joined,
unless some rank was busy and some other rank neither stopped nor waited. The suspects are the
ranks that are stopped, else those outside a collective while others wait in one (a busy rank among
waiting ones is such a rank: stuck in a loop of its own).
"""

from __future__ import annotations

from dataclasses import dataclass, field

STOPPED = ("T", "t", "Z", "X")
# Where a rank's main thread waits for its peers (file parts and function names of py-spy frames).
WAIT_FILES = ("torch/distributed/", "torch/cuda/streams.py", "torch/cuda/__init__.py")
# Function names (any part, any case) that wait for the other ranks, such as Lightning's
# `_broadcast_sigterm_tensor` around torch's broadcast (seen on an H100), and exact ones.
WAIT_PARTS = ("barrier", "all_reduce", "allreduce", "all_gather", "allgather", "broadcast", "reduce_scatter",
              "synchronize", "all_to_all", "_engine_run_backward")
WAIT_FUNCTIONS = ("wait", "gather", "scatter", "recv", "send")


def in_collective(stack: list[str]) -> bool:
    """Whether py-spy's main-thread frames (innermost first) show a wait for the other ranks."""
    for frame in stack[:12]:
        function = frame.split(" (", 1)[0].strip().rsplit(".", 1)[-1]
        where = frame.rsplit("(", 1)[-1]
        if (any(part in where for part in WAIT_FILES) or function in WAIT_FUNCTIONS
                or any(part in function.lower() for part in WAIT_PARTS)):
            return True
    return False


@dataclass
class RankView:
    host: str
    rank: int
    pid: int
    state: str
    stack: list[str] | None
    main_cpu: int | None
    io: int | None
    seen: float
    moved: float
    first_seen: float
    busy: float | None = None  # when its CPU last grew with its stack put, outside a collective


@dataclass
class StallWatch:
    stall_after: float
    ranks: dict[int, RankView] = field(default_factory=dict)
    world: int | None = None
    joined_at: float | None = None
    first_progress_at: float | None = None
    reported_since: float | None = None

    def add(self, host: str, sample: dict) -> list[str]:
        """Take one host's sample; returns the progress events it showed ("ranks started 2/4", ...)."""
        events, now, tick = [], float(sample["t"]), float(sample.get("clk_tck") or 100)
        for item in sample.get("ranks", []):
            if item.get("world"):
                self.world = int(item["world"])
            old = self.ranks.get(item["rank"])
            stack = item.get("stack") if "stack" in item and item.get("stack") else None
            view = RankView(host, item["rank"], item["pid"], item["state"], stack, item.get("main_cpu"),
                            item.get("io"), now, old.moved if old else now, old.first_seen if old else now,
                            old.busy if old and old.pid == item["pid"] else None)
            if old is not None and old.pid == view.pid and busy(old, view):
                view.busy = now
            if old is None or old.pid != view.pid:
                if old is None:
                    events.append(f"ranks started {len(self.ranks) + 1}/{self.world or '?'}")
            elif moved(old, view, tick):
                view.moved = now
                if self.joined_at is not None and self.first_progress_at is None and now > self.joined_at:
                    self.first_progress_at = now
                    events.append("training running: the first collectives done (a rank's stack moved after "
                                  "every rank joined)")
            self.ranks[item["rank"]] = view
        if self.joined_at is None and self.world and len(self.ranks) >= self.world:
            self.joined_at = now
            events.append(f"every rank joined ({self.world}); watching for stalls of {self.stall_after:g} s")
        return events

    def last_progress(self) -> float | None:
        if self.joined_at is None:
            return None
        return max([self.joined_at] + [view.moved for view in self.ranks.values()])

    def stalled(self, now: float) -> dict | None:
        """A new stall ({since, seconds, suspects, waiting}) once per stall; None while the job moves."""
        last = self.last_progress()
        if last is None:
            return None
        if self.reported_since is not None and last > self.reported_since:
            self.reported_since = None  # it moved again: a later stall is a new one
        if now - last < self.stall_after or self.reported_since is not None or self._busy_elsewhere(now):
            return None
        self.reported_since = last
        return {"since": last, "seconds": round(now - last, 1), **suspects(list(self.ranks.values()))}

    def _busy_elsewhere(self, now: float) -> bool:
        """Some rank was busy lately and some other rank was neither stopped nor waiting: a loop
        sampled at the same line on every rank, not a hang."""
        views = list(self.ranks.values())
        recent = [v for v in views if v.busy is not None and now - v.busy < self.stall_after]
        others = [v for v in views if v not in recent]
        return bool(recent) and (not others or any(not _stopped(v) and not _waiting(v) for v in others))


def _stopped(view: RankView) -> bool:
    """Stopped, a zombie, or in uninterruptible sleep (state D)."""
    return view.state in STOPPED or view.state == "D"


def _waiting(view: RankView) -> bool:
    """Its main thread waits in a collective."""
    return view.stack is not None and in_collective(view.stack)


def busy(old: RankView, new: RankView) -> bool:
    """Its main thread used CPU with its stack put, outside a collective."""
    return (new.state not in STOPPED and new.stack is not None and new.stack == old.stack
            and not in_collective(new.stack) and _grew(old.main_cpu, new.main_cpu, 1))


def moved(old: RankView, new: RankView, tick: float = 100) -> bool:
    if new.state in STOPPED:
        return False
    if new.io is not None and old.io is not None and new.io > old.io:
        return True
    if new.stack is not None and old.stack is not None:
        # CPU says nothing here: a host thread blocked in a CUDA launch or synchronize behind an NCCL
        # kernel that waits for a stopped peer spins at 100% with its stack put (seen on an H100).
        return new.stack != old.stack
    return _grew(old.main_cpu, new.main_cpu, 1)


def _grew(old, new, least) -> bool:
    return old is not None and new is not None and new - old >= least


def suspects(views: list[RankView]) -> dict:
    """The ranks to name: stopped ones first, else those outside a collective while others wait in one."""
    stopped = [v for v in views if _stopped(v)]
    waiting = [v for v in views if _waiting(v)]
    elsewhere = [v for v in views if v not in waiting and v not in stopped]
    chosen = stopped or (elsewhere if waiting else [])
    return {"suspects": [{"rank": v.rank, "host": v.host, "pid": v.pid, "state": v.state,
                          "where": (v.stack or ["(no stack)"])[0]} for v in sorted(chosen, key=lambda v: v.rank)],
            "waiting": sorted(v.rank for v in waiting)}
