"""Unequal workers in the kernel: the reference's step multipliers (``--worker-speeds``,
``--slowdown``), drawn in Python before the run.

The reference asks ``StepMultipliers.next(w)`` when worker ``w`` starts a step, from one stream
per worker, so worker ``w``'s ``k``-th multiplier does not depend on when it is asked. Here the
same object is asked ahead of the run for the first ``columns`` steps of every worker, and the
kernel multiplies a starting step's compute hold times by the next one of its row; a run whose
worker outlives its row says so and is repeated with more (``entry``), as with the link's words.
Imports no numba.
"""

from __future__ import annotations

import numpy as np

from replay.engine.compiled import KIND_COMPUTE
from replay.engine.slowdown import SlowdownSpec, StepMultipliers


def step_factors(slowdown: SlowdownSpec, worker_speeds: tuple[float, ...], workers: int, seed: int,
                 columns: int) -> np.ndarray | None:
    """(workers, columns) multipliers of each worker's steps in order, or None when every one is 1
    (the reference then skips the scaling, and so does the kernel). Raises what the reference
    raises for a slowdown it cannot apply (a step-times file with too few workers)."""
    multipliers = StepMultipliers(slowdown, worker_speeds, workers, seed)
    if multipliers.uniform:
        return None
    return np.array([[multipliers.next(w) for _ in range(columns)] for w in range(workers)], dtype=np.float64)


def scaled_first_steps(hold: np.ndarray, kind: np.ndarray, factors: np.ndarray) -> np.ndarray:
    """Each worker's first step's hold times, its compute multiplied by its first multiplier as
    the reference multiplies them (``h * factor``); ``hold`` is (workers, n) or the (1, n) means."""
    rows = np.repeat(hold, factors.shape[0], axis=0) if hold.shape[0] == 1 else hold.copy()
    compute = kind == KIND_COMPUTE
    for w in range(factors.shape[0]):
        rows[w, compute] = rows[w, compute] * factors[w, 0]
    return rows
