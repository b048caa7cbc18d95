"""Synchronous SGD with a cutoff (Teng and Wood, NeurIPS 2018; Chen et al.'s backup workers).

Steps are rounds. A round opens when the PS has applied the previous update: every worker
starts its step on the new parameters. The PS closes the round at the cutoff, or when every
worker's gradient is in, whichever comes first; workers still computing or sending are
interrupted (their work is dropped, they start over in the next round) and the PS applies one
update of the gradients that arrived, holding the PS for the step's PS op time. A round in which
no gradient arrived applies nothing and the next round opens at once.

When the round closes:

- ``static:SECONDS``: ``SECONDS`` after it opened;
- ``gradients:R``: when R gradients are in (Chen et al.'s N - R backup workers, with late
  workers interrupted rather than left to finish as TensorFlow does; memoryless compute times
  give the order-statistic step (1/λ) Σ_{i<R} 1/(N - i));
- ``dynamic``: at the cutoff chosen at the round's opening from a predictive model of every
  worker's next run-time fitted online (``runtime_model``) to maximize expected gradients
  applied per second. Until the model has seen a few steps, and in two rounds of every
  ``EXPLORE_EVERY``, rounds wait for every worker, so the model keeps seeing run-times the
  cutoff would otherwise hide. The policy also checks itself: while rounds that waited for
  everyone have lately applied more gradients per second than the rounds it cut, it waits for
  everyone (trying its cutoff again once every ``EXPLORE_EVERY`` rounds).

Work in flight when a round closes is abandoned, but bytes already on the link are not
recalled: an interrupted transfer finishes crossing the link (as a gRPC message being sent
does), its arrival ignored.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from replay.sync.base import DisciplineRun, SyncDiscipline
from replay.sync.runtime_model import RunTimeModel, best_cutoff
from tracetool.errors import ToolError

SCENARIOS = 64  # joint draws of the next run-times per decision (fewer at many workers)
MAX_CUTOFF_S = 86400.0
EXPLORE_EVERY = 20
REALIZED_DECAY = 0.9  # weight of the older rounds in the realized rates, per round


@dataclass(frozen=True)
class CutoffRule:
    """A parsed ``--cutoff``: ``kind`` is static, gradients or dynamic."""

    kind: str
    seconds: float = math.inf
    gradients: int = 0

    def describe(self) -> str:
        if self.kind == "static":
            return f"static:{self.seconds:g}"
        if self.kind == "gradients":
            return f"gradients:{self.gradients}"
        return "dynamic"


def parse_cutoff(text: str) -> CutoffRule:
    """``--cutoff`` text to a rule; every mistake is a one-line ToolError."""
    kind, _, rest = text.strip().partition(":")
    usage = "give static:SECONDS (e.g. static:0.05), gradients:R or dynamic"
    if kind == "dynamic" and not rest:
        return CutoffRule("dynamic")
    if kind == "static":
        try:
            seconds = float(rest)
        except ValueError:
            raise ToolError(f"--cutoff {text}: {usage}") from None
        if not (math.isfinite(seconds) and 0.0 < seconds <= MAX_CUTOFF_S):
            raise ToolError(f"--cutoff {text}: the cutoff must be above 0 and at most {MAX_CUTOFF_S:g} seconds "
                            "(a cutoff of 0 would drop every gradient)")
        return CutoffRule("static", seconds=seconds)
    if kind == "gradients":
        try:
            count = int(rest)
        except ValueError:
            raise ToolError(f"--cutoff {text}: {usage}") from None
        if count < 1:
            raise ToolError(f"--cutoff {text}: wait for at least 1 gradient")
        return CutoffRule("gradients", gradients=count)
    raise ToolError(f"--cutoff {text}: {usage}")


class Cutoff(SyncDiscipline):
    name = "cutoff"
    releases_together = True  # a round's close starts every worker's next step
    interrupts_steps = True  # a late worker's step is abandoned at the round's close

    def __init__(self, rule: CutoffRule) -> None:
        self.rule = rule

    def new_run(self, workers: int, update_s: float, seed: int = 0) -> CutoffRun:
        if self.rule.kind == "gradients" and self.rule.gradients > workers:
            raise ToolError(f"--cutoff gradients:{self.rule.gradients} waits for more gradients than the {workers} "
                            "workers send per round; give at most the worker count")
        return CutoffRun(workers, update_s, self.rule, seed)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "cutoff": self.rule.describe()}


class CutoffRun(DisciplineRun):
    """One replay's rounds: who is in, when the round closes, and the run-time model."""

    name = "cutoff"
    gates_steps = True
    one_update_per_step = False

    def __init__(self, workers: int, update_s: float, rule: CutoffRule, seed: int) -> None:
        super().__init__(workers)
        self.rule = rule
        self.update_s = update_s
        self.round = 0
        self.is_open = True
        self.opened_at = 0.0
        self.round_of = [-1] * workers  # the round each worker's current step belongs to
        self.step_start = [0.0] * workers
        self.in_flight: set[int] = set()  # workers computing or sending in this round
        self.arrived = 0
        self.close_at = math.inf  # the pending cutoff timer
        self.reopen_at = math.inf  # the pending end of an update
        self.model = RunTimeModel(workers) if rule.kind == "dynamic" else None
        self.rng = np.random.default_rng([seed, 0xC07])
        self.cutoffs: list[float] = []  # the cutoff of every timed round, for reports
        # gradients and seconds of recent rounds closed by the cutoff [0] and by arrivals [1]
        self.realized = [(0.0, 0.0), (0.0, 0.0)]
        self.first_close = self._cutoff()

    def first_wake(self) -> float | None:
        """Round 0 opens as the replay starts."""
        if self.first_close < math.inf:
            self.close_at = self.first_close
            return self.close_at
        return None

    def _cutoff(self) -> float:
        """Seconds after the opening at which this round closes (inf: when enough have arrived)."""
        if self.rule.kind == "static":
            return self.rule.seconds
        if self.model is None or not self.model.ready:
            return math.inf
        if self.round % EXPLORE_EVERY < 2:
            # Two rounds in EXPLORE_EVERY wait for every worker: the pairs of consecutive run-times
            # the model learns from would otherwise hold only the workers fast enough to make the
            # cutoff, and a model that never sees a cut worker's run-time cannot learn to wait for it.
            return math.inf
        if self.round % EXPLORE_EVERY != 2 and self.waiting_pays():
            return math.inf
        scenarios = self.model.sample(self.rng, max(8, min(SCENARIOS, 65536 // max(1, self.workers))))
        cutoff = best_cutoff(scenarios, self.update_s)
        self.cutoffs.append(cutoff)
        return cutoff

    def waiting_pays(self) -> bool:
        """Whether rounds that waited for everyone have lately applied more gradients per second
        than rounds the model cut. The model predicts each worker alone; when run-times depend
        on each other (workers sharing a saturated link, where the transfers of cut workers
        still occupy it), it can cut too early round after round, and this check catches it."""
        (cut_gradients, cut_s), (full_gradients, full_s) = self.realized
        if cut_s <= 0.0 or full_s <= 0.0:
            return False
        return full_gradients / full_s > cut_gradients / cut_s

    def on_step_start(self, worker: int, now: float) -> None:
        self.round_of[worker] = self.round
        self.step_start[worker] = now
        self.in_flight.add(worker)

    def may_start(self, worker: int, steps_done: list[int]) -> bool:
        return self.is_open and self.round_of[worker] < self.round

    def on_step_end(self, worker: int, now: float) -> float | None:
        self.in_flight.discard(worker)
        self.last_applied = True
        self.arrived += 1
        self.staleness.append(0)
        if self.model is not None:
            self.model.observe(worker, now - self.step_start[worker], censored=False)
        everyone = self.arrived == self.workers  # a worker starts at most once per round
        enough = self.rule.kind == "gradients" and self.arrived >= self.rule.gradients
        if everyone or enough:
            return self._close(now)
        return None

    def _close(self, now: float) -> float:
        kind = 0 if self.close_at == now else 1  # closed by the cutoff, or by everyone (or R) being in
        gradients, seconds = self.realized[kind]
        self.realized[kind] = (REALIZED_DECAY * gradients + self.arrived,
                               REALIZED_DECAY * seconds + now - self.opened_at + self.update_s)
        self.is_open = False
        self.close_at = math.inf
        for worker in sorted(self.in_flight):
            if self.model is not None:
                self.model.observe(worker, now - self.step_start[worker], censored=True)
            self.aborts.append(worker)
        self.dropped += len(self.in_flight)
        self.in_flight.clear()
        self.applied += self.arrived
        if self.arrived:
            self.reopen_at = now + self.update_s
        else:
            self.reopen_at = now  # nothing to apply
        return self.reopen_at

    def on_wake(self, now: float) -> float | None:
        if now == self.close_at and self.is_open:
            return self._close(now)
        if now == self.reopen_at and not self.is_open:
            self.reopen_at = math.inf
            if self.arrived:
                self.updates += 1
                self.version += 1
            self.round += 1
            self.arrived = 0
            self.is_open = True
            self.opened_at = now
            cutoff = self._cutoff()
            if cutoff < math.inf:
                self.close_at = now + cutoff
                return self.close_at
        return None
