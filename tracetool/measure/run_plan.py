"""How long a measurement will take, said before its first cluster starts.

Why: validate's settled windows (``tracetool.measure.windows``) and its runs until the mean is
known make a measurement of four worker counts take from about twenty minutes to hours, and
which of the two it will be depends on how the runs agree. A user deciding whether to wait, or
to pass fewer worker counts or a shorter ``--duration``, needs both ends before it starts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

# Seconds a run takes besides its settling and its window: starting the PS and worker
# processes (TensorFlow's import), connecting them and the warm-up steps. Measured here: runs of
# 60 s after 20 s of settling took 100 to 102 s from one run's start to the next.
RUN_OVERHEAD_S = 20.0


class PlannedMeasurement(Protocol):
    """The fields of a ``MeasureRequest`` the plan reads."""

    workers: tuple[int, ...]
    repeats: int
    max_repeats: int | None
    duration_s: float
    settle_s: float


def run_seconds(request: PlannedMeasurement) -> float:
    """One run's expected wall time."""
    return request.duration_s + request.settle_s + RUN_OVERHEAD_S


def format_minutes(seconds: float) -> str:
    """``23 min`` or ``2 h 04 min``: a wait, not a measurement, so whole minutes."""
    minutes = max(1, round(seconds / 60.0))
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"


def describe_plan(requests: Sequence[PlannedMeasurement]) -> str:
    """One line: how many runs of what window, about how long, and how long at most where runs
    disagree and more are run (every count at its ``max_repeats``)."""
    runs = sum(r.repeats * len(r.workers) for r in requests)
    most = sum((r.max_repeats or r.repeats) * len(r.workers) for r in requests)
    least_s = sum(r.repeats * len(r.workers) * run_seconds(r) for r in requests)
    most_s = sum((r.max_repeats or r.repeats) * len(r.workers) * run_seconds(r) for r in requests)
    first = requests[0]
    line = (f"{runs} run(s) of {first.duration_s:g} s after {first.settle_s:g} s of settling: about "
            f"{format_minutes(least_s)}")
    if most > runs:
        line += f", up to {format_minutes(most_s)} if every count's runs disagree and {most} are run"
    return line
