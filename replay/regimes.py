"""The two regimes a run of several workers settles into, and the spread they give a prediction.

Real clusters of three or four asynchronous workers on one shared link are bimodal: a run
either settles into a pipeline (workers take turns; each direction stays busy) or keeps
bunching (connections overtake each other and the workers transfer in one direction together
while the other idles), and it keeps that pattern for its whole window. alexnet at 50mbit with
three workers measured 2.40, 2.43 and 2.47 steps/s in three runs and 2.23, 2.17 and 2.21 in three
others; mobilenet_v2 at 100mbit with four workers 1.19 and 1.00 (docs/models.md).

The default sharing model draws whether a joining connection overtakes at every join, with the
law's chance ``p = min(cap, tau / T)`` (``replay.engine.sharing``). Within one replay those draws
average out, so its seeds agree closely and miss either regime. This module replays the two
regimes as their own sweeps: the *pipeline* one never overtakes (chance 0), the *bunching* one
overtakes at the law's cap at every join. Replayed for alexnet at 50mbit with three workers
they give 2.40 and 2.13 steps/s, the two clusters of the measured runs. Their mixture, the
bunching regime with chance ``p / cap`` (the law's mean chance), has the law's mean chance of
overtaking per join, so the law's own prediction stays the point estimate; the regimes give
the range in which a single measured run may fall, and ``validate`` says when one falls
outside it.

Only asynchronous seniority sharing with overtaking has regimes; other settings get ``None``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from replay.engine.link import LinkConfig
from replay.engine.sharing import SenioritySharing, sharing_model
from replay.sweep import Prediction, ReplaySettings, predict, released_groups
from tracetool.graph.stepgraph import StepGraph

PIPELINE = "pipeline"
BUNCHING = "bunching"


@dataclass(frozen=True)
class RegimePoint:
    """One worker count's two regimes: mean and seed range of each, and the bunching one's weight."""

    workers: int
    pipeline: float
    pipeline_min: float
    pipeline_max: float
    bunching: float
    bunching_min: float
    bunching_max: float
    bunching_chance: float  # the weight of the bunching regime in the mixture

    @property
    def low(self) -> float:
        return min(self.pipeline_min, self.bunching_min)

    @property
    def high(self) -> float:
        return max(self.pipeline_max, self.bunching_max)

    @property
    def mixture_mean(self) -> float:
        return self.bunching_chance * self.bunching + (1.0 - self.bunching_chance) * self.pipeline

    def covers(self, value: float) -> bool:
        return self.low <= value <= self.high

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "workers": self.workers,
            PIPELINE: {"steps_per_second": self.pipeline, "min": self.pipeline_min, "max": self.pipeline_max},
            BUNCHING: {"steps_per_second": self.bunching, "min": self.bunching_min, "max": self.bunching_max},
            "bunching_chance": self.bunching_chance,
            "low": self.low,
            "high": self.high,
            "mixture_mean": self.mixture_mean,
        }


def overtaking_sharing(settings: ReplaySettings) -> SenioritySharing | None:
    """The seniority model with overtaking these settings replay, or None when they have no regimes
    (another sharing model, no overtaking, or released groups, which never overtake)."""
    if settings.sharing != "seniority" or settings.sync != "async":
        return None
    model = sharing_model(settings.sharing, settings.max_streams, settings.seniority, settings.overtake,
                          settings.overtake_time_s, *released_groups(settings))
    if not isinstance(model, SenioritySharing) or model.overtake <= 0.0 or model.join_window_s > 0.0:
        return None
    return model


def bunching_chance(model: SenioritySharing, download_bytes: int, upload_bytes: int, link: LinkConfig) -> float:
    """The bunching regime's weight: the law's chance over its cap, averaged over both directions
    (each direction's chance follows its own transfer time, as in the event loop)."""
    times = (8.0 * download_bytes / link.download_payload_bps(), 8.0 * upload_bytes / link.upload_payload_bps())
    return sum(model.overtake_chance(t) for t in times) / (2.0 * model.overtake)


def predict_regimes(graph: StepGraph, workers: list[int], link: LinkConfig,
                    settings: ReplaySettings) -> list[RegimePoint] | None:
    """Replay both regimes for each worker count with ``settings``' seeds; None without regimes."""
    model = overtaking_sharing(settings)
    if model is None:
        return None
    pipeline = predict(graph, workers, link, replace(settings, overtake=0.0, overtake_time_s=model.overtake_time_s))
    bunching = predict(graph, workers, link, replace(settings, overtake=model.overtake, overtake_time_s=math.inf))
    return combine(pipeline, bunching, bunching_chance(model, pipeline.download_bytes_per_step,
                                                        pipeline.upload_bytes_per_step, link))


def combine(pipeline: Prediction, bunching: Prediction, chance: float) -> list[RegimePoint]:
    """The regimes of every worker count of two or more: a lone worker has nobody to overtake, and
    its seeds' range (zero under mean durations) is no range a measured run must fall in."""
    by_workers = {p.workers: p for p in bunching.points}
    return [
        RegimePoint(p.workers, p.steps_per_second, p.steps_per_second_min, p.steps_per_second_max,
                    b.steps_per_second, b.steps_per_second_min, b.steps_per_second_max, chance)
        for p in pipeline.points
        if p.workers >= 2
        for b in (by_workers[p.workers],)
    ]
