"""TensorFlow's ``SyncReplicasOptimizer``: ``sync`` (R = N) and ``backup`` (R < N) training.

A worker's step ends with its gradients pushed to the PS's accumulators; a gradient computed on
a step older than the global step is dropped. When R gradients of the current step are in, the
PS applies one update (it holds the PS for the step's PS op time), the global step advances,
and max(N, R) tokens of the new step are queued. A worker takes a token after pushing its
gradients and computes its next step on the token's step; without a token it waits. Tokens are
a shared pool, so the R gradients of an update need not come from R different workers. At
start R tokens of step 0 are queued, as TensorFlow's session hook does, so the first gradients
after the first update are stale.

Late workers are not interrupted: a backup worker finishes its step, its gradient is dropped,
and it takes the oldest token. When workers together push fewer than N gradients per update,
tokens pile up and fast workers compute on old steps; this is why, with memoryless compute
times, backup workers raise the update rate only up to one worker's step rate (docs/replay.md).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from replay.sync.base import DisciplineRun, SyncDiscipline
from tracetool.errors import ToolError


class SyncReplicas(SyncDiscipline):
    """TensorFlow's SyncReplicasOptimizer: R gradients per update, tokens end a step, stale ones dropped."""

    name = "sync"
    releases_together = True  # an update's tokens start the waiting workers' steps at once

    def __init__(self, replicas_to_aggregate: int | None = None, backup: bool = False) -> None:
        self.replicas_to_aggregate = replicas_to_aggregate  # None: every worker (R = N)
        self.name = "backup" if backup else "sync"

    def aggregate(self, workers: int) -> int:
        """R for ``workers`` workers: as given, else N for sync and N - 1 (at least 1) for backup."""
        if self.replicas_to_aggregate is not None:
            return self.replicas_to_aggregate
        return max(1, workers - 1) if self.name == "backup" else workers

    def new_run(self, workers: int, update_s: float, seed: int = 0) -> SyncReplicasRun:
        r = self.aggregate(workers)
        if self.name == "backup" and workers > 1 and r >= workers:
            raise ToolError(f"--sync backup with --replicas-to-aggregate {r} and {workers} workers leaves no backup "
                            "worker; give R below the worker count")
        if self.name == "sync" and r > workers:
            raise ToolError(f"--replicas-to-aggregate {r} is above the {workers} workers; with R above N every "
                            "update waits for gradients of stale steps; give R of at most the worker count")
        return SyncReplicasRun(workers, r, update_s)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "replicas_to_aggregate": self.replicas_to_aggregate}


class SyncReplicasRun(DisciplineRun):
    """One replay's accumulators, global step and token queue."""

    name = "sync"
    gates_steps = True
    one_update_per_step = False

    def __init__(self, workers: int, replicas_to_aggregate: int, update_s: float) -> None:
        super().__init__(workers)
        self.r = replicas_to_aggregate
        self.update_s = update_s
        self.tokens: deque[int] = deque([0] * replicas_to_aggregate)  # the session hook's initial tokens
        self.local_step = [0] * workers
        self.accepted = 0  # gradients of the current step in the accumulators
        self.updating = False

    def may_start(self, worker: int, steps_done: list[int]) -> bool:
        if not self.tokens:
            return False
        self.local_step[worker] = self.tokens.popleft()
        return True

    def on_step_start(self, worker: int, now: float) -> None:
        pass  # the step's parameters are those of the token's step (local_step), not of now

    def _start_update(self, now: float) -> float:
        # take_grad averages every gradient the accumulators hold (R or more) and empties them
        self.updating = True
        self.applied += self.accepted
        self.staleness.extend([0] * self.accepted)  # only gradients of the global step are accepted
        self.accepted = 0
        return now + self.update_s

    def on_step_end(self, worker: int, now: float) -> float | None:
        if self.local_step[worker] < self.version:
            self.dropped += 1  # computed on a step the accumulators have left behind
            self.last_applied = False
            return None
        self.last_applied = True
        self.accepted += 1
        if self.accepted >= self.r and not self.updating:
            return self._start_update(now)
        return None

    def on_wake(self, now: float) -> float | None:
        self.updating = False
        self.updates += 1
        self.version += 1  # the global step
        self.tokens.extend([self.version] * max(self.workers, self.r))
        # gradients accepted while the update ran wait in the accumulators for the next one
        if self.accepted >= self.r:
            return self._start_update(now)
        return None
