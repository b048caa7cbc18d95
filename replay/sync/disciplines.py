"""The disciplines the replay knows, behind the one question the event loop asks them.

At the end of every step of every worker the loop asks ``may_start(worker, steps_done)``:
may this worker start its next step now? A worker that may not waits, off every lane and the
link, until the answer changes; the loop asks again for every waiting worker whenever any
worker ends a step. The time spent so is the point's ``waiting_for_peers_s``.

- ``async`` (asynchronous SGD, TensorFlow's default between-graph replication): always yes.
- ``ssp`` (Stale Synchronous Parallel, Ho et al. 2013) with staleness bound ``s``: a worker that
  has completed ``c`` steps may start its next one while ``c - min(completed) <= s``, i.e. it is
  never more than ``s`` steps ahead of the slowest worker. ``s = 0`` is lock-step (a barrier
  after every step); a large ``s`` is asynchronous.
- ``sync`` and ``backup`` (TensorFlow's ``SyncReplicasOptimizer`` with ``replicas_to_aggregate``
  R of N workers, N - R of them backups): a worker's step ends with its gradients pushed to the
  PS's accumulators; a gradient computed on a step older than the global step is dropped. When
  R gradients of the current step are in, the PS applies one update (it holds the PS for the
  step's PS op time), the global step advances, and max(N, R) tokens of the new step are
  queued. A worker takes a token after pushing its gradients and computes its next step on
  the token's step; without a token it waits. Tokens are a shared pool, so the R gradients of
  an update need not come from R different workers. At start R tokens of step 0 are queued,
  as TensorFlow's session hook does, so the first gradients after the first update are stale.

Each replay gets a fresh ``DisciplineRun`` from ``new_run``, as each gets fresh links.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from tracetool.errors import ToolError

SYNC_DISCIPLINES = ("async", "ssp", "sync", "backup")


class SyncDiscipline:
    """Asynchronous training: no worker ever waits for another."""

    name = "async"

    def may_start(self, worker: int, steps_done: list[int]) -> bool:
        return True

    @property
    def gates_steps(self) -> bool:
        """Whether the loop must ask at all (asynchronous training never waits)."""
        return False

    def new_run(self, workers: int, update_s: float) -> SyncDiscipline:
        """The state of one replay; stateless disciplines are their own run."""
        return self

    def on_step_end(self, worker: int, now: float) -> float | None:
        """A worker pushed its step's gradients; return when the discipline needs waking, if at all."""
        return None

    def on_wake(self, now: float) -> float | None:
        """The time ``on_step_end`` or an earlier wake asked for has come; return the next, if any."""
        return None

    def counters(self) -> dict[str, int]:
        """What the discipline counted in a replay (updates, gradients applied and dropped)."""
        return {}

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}


class AsyncTraining(SyncDiscipline):
    pass


class StaleSynchronous(SyncDiscipline):
    """Bounded staleness: at most ``staleness`` steps ahead of the slowest worker."""

    name = "ssp"

    def __init__(self, staleness: int) -> None:
        self.staleness = staleness

    def new_run(self, workers: int, update_s: float) -> StaleSynchronousRun:
        return StaleSynchronousRun(workers, self.staleness)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "staleness": self.staleness}


class StaleSynchronousRun(SyncDiscipline):
    """One replay's step counts, with the slowest worker's kept up to date as steps end, so that
    asking costs the same at 4,096 workers as at 2 (a ``min`` over all workers per question
    doubled the replay time of 512 lock-step workers)."""

    name = "ssp"

    def __init__(self, workers: int, staleness: int) -> None:
        self.staleness = staleness
        self.completed = [0] * workers
        self.workers_at = {0: workers}  # completed steps -> how many workers have completed that many
        self.slowest = 0

    @property
    def gates_steps(self) -> bool:
        return True

    def on_step_end(self, worker: int, now: float) -> float | None:
        done = self.completed[worker]
        self.completed[worker] = done + 1
        self.workers_at[done] -= 1
        self.workers_at[done + 1] = self.workers_at.get(done + 1, 0) + 1
        while not self.workers_at.get(self.slowest):
            self.workers_at.pop(self.slowest, None)
            self.slowest += 1
        return None

    def may_start(self, worker: int, steps_done: list[int]) -> bool:
        return self.completed[worker] - self.slowest <= self.staleness


class SyncReplicas(SyncDiscipline):
    """TensorFlow's SyncReplicasOptimizer: R gradients per update, tokens end a step, stale ones dropped."""

    name = "sync"

    def __init__(self, replicas_to_aggregate: int | None = None, backup: bool = False) -> None:
        self.replicas_to_aggregate = replicas_to_aggregate  # None: every worker (R = N)
        self.name = "backup" if backup else "sync"

    def aggregate(self, workers: int) -> int:
        """R for ``workers`` workers: as given, else N for sync and N - 1 (at least 1) for backup."""
        if self.replicas_to_aggregate is not None:
            return self.replicas_to_aggregate
        return max(1, workers - 1) if self.name == "backup" else workers

    def new_run(self, workers: int, update_s: float) -> SyncReplicasRun:
        r = self.aggregate(workers)
        if self.name == "backup" and workers > 1 and r >= workers:
            raise ToolError(f"--sync backup with --replicas-to-aggregate {r} and {workers} workers leaves no backup "
                            "worker; give R below the worker count")
        return SyncReplicasRun(workers, r, update_s)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "replicas_to_aggregate": self.replicas_to_aggregate}


class SyncReplicasRun(SyncDiscipline):
    """One replay's accumulators, global step and token queue."""

    def __init__(self, workers: int, replicas_to_aggregate: int, update_s: float) -> None:
        self.name = "sync"
        self.workers = workers
        self.r = replicas_to_aggregate
        self.update_s = update_s
        self.global_step = 0
        self.tokens: deque[int] = deque([0] * replicas_to_aggregate)  # the session hook's initial tokens
        self.local_step = [0] * workers
        self.accepted = 0  # gradients of the current step in the accumulators
        self.updating = False
        self.updates = 0
        self.applied = 0
        self.dropped = 0

    @property
    def gates_steps(self) -> bool:
        return True

    def may_start(self, worker: int, steps_done: list[int]) -> bool:
        if not self.tokens:
            return False
        self.local_step[worker] = self.tokens.popleft()
        return True

    def _start_update(self, now: float) -> float:
        # take_grad averages every gradient the accumulators hold (R or more) and empties them
        self.updating = True
        self.applied += self.accepted
        self.accepted = 0
        return now + self.update_s

    def on_step_end(self, worker: int, now: float) -> float | None:
        if self.local_step[worker] < self.global_step:
            self.dropped += 1  # computed on a step the accumulators have left behind
            return None
        self.accepted += 1
        if self.accepted >= self.r and not self.updating:
            return self._start_update(now)
        return None

    def on_wake(self, now: float) -> float | None:
        self.updating = False
        self.updates += 1
        self.global_step += 1
        self.tokens.extend([self.global_step] * max(self.workers, self.r))
        # gradients accepted while the update ran wait in the accumulators for the next one
        if self.accepted >= self.r:
            return self._start_update(now)
        return None

    def counters(self) -> dict[str, int]:
        return {"updates": self.updates, "gradients_applied": self.applied, "gradients_dropped": self.dropped}


MAX_STALENESS = 10**9


def sync_discipline(
    name: str, staleness: int | None = None, replicas_to_aggregate: int | None = None
) -> SyncDiscipline:
    """The discipline ``--sync NAME`` names; every mistake is a one-line ToolError."""
    if replicas_to_aggregate is not None:
        if name not in ("sync", "backup"):
            raise ToolError("--replicas-to-aggregate applies to --sync sync or backup only")
        if not 1 <= replicas_to_aggregate <= 1_000_000:
            raise ToolError(f"--replicas-to-aggregate must be at least 1, got {replicas_to_aggregate}")
    if name == "async":
        if staleness is not None:
            raise ToolError("--staleness applies to --sync ssp only")
        return AsyncTraining()
    if name == "ssp":
        if staleness is None:
            raise ToolError("--sync ssp needs --staleness S (0 is lock-step; the bound in steps ahead of the slowest)")
        if not 0 <= staleness <= MAX_STALENESS:
            raise ToolError(f"--staleness must be between 0 and {MAX_STALENESS}, got {staleness}")
        return StaleSynchronous(staleness)
    if name in ("sync", "backup"):
        if staleness is not None:
            raise ToolError("--staleness applies to --sync ssp only")
        return SyncReplicas(replicas_to_aggregate, backup=name == "backup")
    raise ToolError(f"--sync {name}: unknown discipline; choose one of {', '.join(SYNC_DISCIPLINES)}")
