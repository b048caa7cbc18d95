"""The interface between the event loop and a synchronization discipline, and asynchronous SGD.

A discipline (``SyncDiscipline``) is a setting; each replay gets a fresh ``DisciplineRun`` from
``new_run``, as each gets fresh links. The loop tells the run when a worker starts a step
(``on_step_start``, when it reads the parameters) and when its step ends (``on_step_end``,
when its gradient reaches the PS), asks whether a waiting worker may start (``may_start``,
only when ``gates_steps``), wakes it at the times it asked for (``on_wake``), and interrupts
the workers it lists in ``aborts`` (their step's work in flight is abandoned; the step ends
there, its gradient never sent). Everything a discipline decides goes through these calls, so
a new discipline is a new class, never a branch in the loop.

Every run keeps the same books: PS updates, gradients applied and dropped (stale, late or
abandoned), and the staleness of every applied gradient: how many PS updates were applied
between the moment its worker read the parameters and the moment it was applied.
"""

from __future__ import annotations

from typing import Any


class DisciplineRun:
    """One replay's state of asynchronous training: no worker waits, every gradient is applied
    at once as one update."""

    name = "async"
    gates_steps = False  # whether the loop must ask may_start (asynchronous training never waits)
    one_update_per_step = True  # every step applies its gradient as one update (async, ssp)

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.version = 0  # PS updates applied so far
        self.start_version = [0] * workers  # the version each worker's current step read
        self.updates = 0
        self.applied = 0
        self.dropped = 0
        self.staleness: list[int] = []  # of every applied gradient, in the order applied
        self.aborts: list[int] = []  # workers the loop must interrupt now; it empties the list
        self.last_applied = True  # whether the gradient of the step that just ended was applied

    def first_wake(self) -> float | None:
        """When the run first needs waking, asked once after every worker's first step started."""
        return None

    def on_step_start(self, worker: int, now: float) -> None:
        self.start_version[worker] = self.version

    def on_step_end(self, worker: int, now: float) -> float | None:
        """A worker's gradient reached the PS; return when the run needs waking, if at all."""
        self.apply_now(worker)
        return None

    def apply_now(self, worker: int) -> None:
        """Apply one worker's gradient as an update of its own (asynchronous SGD)."""
        self.staleness.append(self.version - self.start_version[worker])
        self.version += 1
        self.updates += 1
        self.applied += 1
        self.last_applied = True

    def on_wake(self, now: float) -> float | None:
        """A time ``on_step_end`` or an earlier wake asked for has come; return the next, if any."""
        return None

    def may_start(self, worker: int, steps_done: list[int]) -> bool:
        return True

    def counters(self) -> tuple[int, int, int, int]:
        """Updates, gradients applied, gradients dropped, and how many staleness values are recorded."""
        return self.updates, self.applied, self.dropped, len(self.staleness)


class SyncDiscipline:
    """Asynchronous training (TensorFlow's between-graph replication without a sync optimizer)."""

    name = "async"
    # Whether one update starts several workers' steps at the same moment (sync rounds). Their
    # downloads then join the link together, which link sharing treats apart (released groups,
    # replay.engine.sharing).
    releases_together = False
    # Whether the loop may have to interrupt a worker's step in flight (its runs' ``aborts``).
    interrupts_steps = False

    def new_run(self, workers: int, update_s: float, seed: int = 0) -> DisciplineRun:
        """A fresh state for one replay; ``update_s`` is how long one update holds the PS."""
        return DisciplineRun(workers)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}


class AsyncTraining(SyncDiscipline):
    pass
