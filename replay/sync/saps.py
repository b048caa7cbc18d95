"""A straggler-aware parameter server: asynchronous SGD whose staleness is bounded without waiting.

Every gradient is applied at once, as in asynchronous training, and the PS knows the parameter
version each worker read at the start of its step (the number of updates applied then). The
coordinator decides after every update: a worker whose step read a version more than ``s``
updates old is a straggler; it is interrupted at once (its work in flight is dropped) and
restarts on the current parameters. So no applied gradient is more than ``s`` updates stale,
and no fast worker ever waits for a slow one, unlike ``ssp``, whose bound holds fast workers
back. The price is the stragglers' dropped work, reported as dropped gradients.

A straggler that cannot finish one step within ``s`` updates of the others never contributes;
the report shows it as a worker whose gradients are all dropped.
"""

from __future__ import annotations

import heapq
from typing import Any

from replay.sync.base import DisciplineRun, SyncDiscipline


class StragglerAware(SyncDiscipline):
    name = "saps"
    interrupts_steps = True  # a straggler's stale step is restarted

    def __init__(self, staleness: int) -> None:
        self.staleness = staleness

    def new_run(self, workers: int, update_s: float, seed: int = 0) -> StragglerAwareRun:
        return StragglerAwareRun(workers, self.staleness)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "staleness": self.staleness}


class StragglerAwareRun(DisciplineRun):
    """Each worker's current step, by the version it read, oldest first."""

    name = "saps"
    one_update_per_step = False  # stragglers' steps end without an update

    def __init__(self, workers: int, staleness: int) -> None:
        super().__init__(workers)
        self.bound = staleness
        self.step_id = [0] * workers
        self.oldest: list[tuple[int, int, int]] = []  # (version read, worker, step id), stale entries skipped

    def on_step_start(self, worker: int, now: float) -> None:
        self.start_version[worker] = self.version
        self.step_id[worker] += 1
        heapq.heappush(self.oldest, (self.version, worker, self.step_id[worker]))

    def on_step_end(self, worker: int, now: float) -> float | None:
        self.step_id[worker] += 1  # the step's heap entry is no longer current
        self.apply_now(worker)
        limit = self.version - self.bound
        oldest = self.oldest
        while oldest and oldest[0][0] < limit:
            _, straggler, step = heapq.heappop(oldest)
            if step == self.step_id[straggler]:
                self.step_id[straggler] += 1
                self.aborts.append(straggler)
                self.dropped += 1
        return None
