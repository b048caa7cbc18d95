"""A predictive model of the workers' next run-times, fitted online, for the dynamic cutoff.

What it fits. A worker's run-time in a step (from the round's opening to its gradient reaching
the PS) is predicted from its last one, by the nearest-neighbour estimate of the conditional
distribution: among the last ``PAIRS_KEPT`` pairs of consecutive uncensored run-times of any
worker, ``(x, y)`` in log seconds, take the ``k`` pairs whose ``x`` is nearest the worker's
last log run-time ``L``, and draw the next log run-time as ``L + (y - x)`` of one of them, so a
worker slow now is predicted from what slow workers did next. ``k`` is 5% of the pairs kept
(at least ``MIN_NEIGHBOURS``). This captures what a linear autoregression cannot: run-times
that switch between regimes (a co-located job comes and goes) have a two-humped next-step
distribution, and pooled Gaussian residuals put its mass between the humps, where no run-time
ever falls. Teng and Wood fit a richer model (a Gaussian process over workers and time); this
one has no parameter to tune beyond ``k``, and fits in microseconds per step.

Censoring. A worker cut off at ``c`` seconds is known only to need more than ``c``. Its level
becomes the mean of its predicted outcomes above ``c`` (or 50% past ``c`` if none is): a worker
that turned slow and was cut is predicted slow, and a cutoff that excludes a slow worker does
not make the model forget how slow it is. Censored steps add no pair.

Prediction. ``sample(rng, m)`` draws ``m`` scenarios of every worker's next run-time.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

PAIRS_KEPT = 2048
MIN_NEIGHBOURS = 8
MIN_PAIRS = 8  # below this the model is not trusted (the caller waits for every worker)
CUTOFF_MARGIN = 1e-4
FALLBACK_EXCESS = math.log(1.5)  # a cut worker no neighbour explains: taken as 50% past the cutoff


class RunTimeModel:
    """Per-worker levels and the pairs of consecutive run-times seen so far."""

    def __init__(self, workers: int) -> None:
        self.level = [math.nan] * workers  # log of each worker's last run-time (or its censored estimate)
        self.level_exact = [False] * workers  # whether that level was an uncensored observation
        self.pairs: deque[tuple[float, float]] = deque(maxlen=PAIRS_KEPT)  # (x, y - x) in log seconds

    @property
    def ready(self) -> bool:
        return len(self.pairs) >= MIN_PAIRS and all(not math.isnan(v) for v in self.level)

    def observe(self, worker: int, seconds: float, censored: bool) -> None:
        """One step's outcome of a worker: its run-time, or (censored) a bound it exceeded."""
        y = math.log(max(seconds, 1e-12))
        x = self.level[worker]
        if censored:
            self.level[worker] = self._expected_above(x, y)
            self.level_exact[worker] = False
            return
        if not math.isnan(x) and self.level_exact[worker]:
            self.pairs.append((x, y - x))
        self.level[worker] = y
        self.level_exact[worker] = True

    def _expected_above(self, level: float, bound: float) -> float:
        """The mean predicted log run-time of a worker at ``level`` given that it exceeded ``bound``."""
        if math.isnan(level) or not self.pairs:
            return bound + FALLBACK_EXCESS
        return expected_above(np.asarray(self.pairs), level, bound)

    def sample(self, rng: np.random.Generator, scenarios: int) -> np.ndarray:
        """``scenarios`` x workers draws of the next run-times, in seconds."""
        return sample_run_times(np.asarray(self.pairs), np.asarray(self.level), rng, scenarios)


# The model's arithmetic on its pairs as a (pairs, 2) array, oldest first, so that the compiled
# replay kernel (replay.engine.kernel.cutoff_model), which keeps the pairs in arrays of its own,
# makes its decisions with these very functions.

def neighbour_changes(table: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """For each level, the changes ``y - x`` of its ``k`` nearest pairs of ``table`` (levels x k)."""
    order = np.argsort(table[:, 0])
    xs, changes = table[order, 0], table[order, 1]
    k = min(len(xs), max(MIN_NEIGHBOURS, len(xs) // 20))
    # the k nearest by x lie in a window of k sorted pairs; slide it towards the nearer side
    lo = np.clip(np.searchsorted(xs, levels) - k // 2, 0, len(xs) - k)
    for _ in range(k):
        left = lo > 0
        right = lo + k < len(xs)
        move_left = left & (np.abs(xs[np.maximum(lo - 1, 0)] - levels) < np.abs(xs[lo + k - 1] - levels))
        move_right = ~move_left & right & (np.abs(xs[np.minimum(lo + k, len(xs) - 1)] - levels)
                                           < np.abs(xs[lo] - levels))
        if not (move_left.any() or move_right.any()):
            break
        lo = lo - move_left + move_right
    return changes[lo[:, None] + np.arange(k)[None, :]]


def expected_above(table: np.ndarray, level: float, bound: float) -> float:
    """The mean predicted log run-time at ``level`` above ``bound``, given at least one pair."""
    outcomes = level + neighbour_changes(table, np.array([level]))[0]
    above = outcomes[outcomes > bound]
    return float(above.mean()) if above.size else bound + FALLBACK_EXCESS


def sample_run_times(table: np.ndarray, levels: np.ndarray, rng: np.random.Generator, scenarios: int) -> np.ndarray:
    """``scenarios`` x workers draws of the next run-times, in seconds, for workers at ``levels``."""
    changes = neighbour_changes(table, levels)  # workers x k
    picks = rng.integers(0, changes.shape[1], size=(scenarios, len(levels)))
    return np.exp(levels[None, :] + changes[np.arange(len(levels))[None, :], picks])


def best_cutoff(scenarios: np.ndarray, update_s: float, candidates: int = 64) -> float:
    """The cutoff that maximizes expected gradients applied per second over the scenarios.

    A round closed at ``c`` applies the gradients that arrive by ``c`` and lasts ``min(c, the
    last arrival)`` plus the update; the ratio of the expectations is the long-run rate of a
    renewal process of such rounds."""
    m = scenarios.shape[0]
    flat = np.sort(scenarios, axis=None)
    last = np.sort(scenarios.max(axis=1))
    prefix = np.concatenate(([0.0], np.cumsum(last)))
    # Just after each candidate arrival, so that a cutoff chosen for an arrival does not tie with it.
    cands = np.unique(np.quantile(flat, np.linspace(0.0, 1.0, candidates))) * (1.0 + CUTOFF_MARGIN)
    arrived = np.searchsorted(flat, cands, side="right") / m
    finished = np.searchsorted(last, cands, side="right")  # scenarios whose last arrival is by c
    duration = (prefix[finished] + cands * (m - finished)) / m + update_s
    rate = arrived / np.maximum(duration, 1e-300)
    return float(cands[int(np.argmax(rate))])
