"""Means and 95% intervals of measured rates (Student t, since windows give few samples)."""

from __future__ import annotations

import math
import statistics

# two-sided 95% Student t quantiles for 1..30 degrees of freedom
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
        2.045, 2.042)


def t95(dof: int) -> float:
    if dof < 1:
        return math.nan
    return _T95[dof - 1] if dof <= len(_T95) else 1.96


def rate_stats(rates: list[float]) -> dict[str, float]:
    mean = statistics.fmean(rates)
    std = statistics.stdev(rates) if len(rates) > 1 else 0.0
    return {"mean": mean, "std": std, "ci95": t95(len(rates) - 1) * std / math.sqrt(len(rates))}
