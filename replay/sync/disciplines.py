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
"""

from __future__ import annotations

from typing import Any

from tracetool.errors import ToolError

SYNC_DISCIPLINES = ("async", "ssp")


class SyncDiscipline:
    """Asynchronous training: no worker ever waits for another."""

    name = "async"

    def may_start(self, worker: int, steps_done: list[int]) -> bool:
        return True

    @property
    def gates_steps(self) -> bool:
        """Whether the loop must ask at all (asynchronous training never waits)."""
        return False

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}


class AsyncTraining(SyncDiscipline):
    pass


class StaleSynchronous(SyncDiscipline):
    """Bounded staleness: at most ``staleness`` steps ahead of the slowest worker."""

    name = "ssp"

    def __init__(self, staleness: int) -> None:
        self.staleness = staleness

    def may_start(self, worker: int, steps_done: list[int]) -> bool:
        return steps_done[worker] - min(steps_done) <= self.staleness

    @property
    def gates_steps(self) -> bool:
        return True

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "staleness": self.staleness}


MAX_STALENESS = 10**9


def sync_discipline(name: str, staleness: int | None = None) -> SyncDiscipline:
    """The discipline ``--sync NAME`` names; every mistake is a one-line ToolError."""
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
    raise ToolError(f"--sync {name}: unknown discipline; choose one of {', '.join(SYNC_DISCIPLINES)}")
