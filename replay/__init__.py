"""Replay of a single-worker step graph for N asynchronous parameter-server workers.

Python entry points (the ``replay`` command calls the same functions):

- ``predict_throughput(graph, workers, link, settings) -> list[Point]``: the validator's call;
- ``predict(...) -> Prediction``: the same plus calibration, bounds and configuration;
- ``target_link`` / ``profiled_link`` build a ``LinkConfig``; ``ReplaySettings`` holds policies,
  steps, seeds and parallelism;
- ``simulate`` (in ``replay.engine.loop``) runs one replay of a compiled graph.

This package never imports TensorFlow.
"""

from replay.calibration import Calibration, calibrate_compute_scale
from replay.engine.link import LinkConfig, profiled_link, target_link
from replay.engine.loop import DurationModel, RunResult, simulate
from replay.engine.order import OrderPolicy, PriorityOrder, RandomOrder, TraceOrder
from replay.engine.sharing import FairSharing, FifoSharing, SharingModel
from replay.sweep import MAX_REPLAY_WORKERS, Point, Prediction, ReplaySettings, predict, predict_throughput

__all__ = [
    "MAX_REPLAY_WORKERS",
    "Calibration",
    "DurationModel",
    "FairSharing",
    "FifoSharing",
    "LinkConfig",
    "OrderPolicy",
    "Point",
    "Prediction",
    "PriorityOrder",
    "RandomOrder",
    "ReplaySettings",
    "RunResult",
    "SharingModel",
    "TraceOrder",
    "calibrate_compute_scale",
    "predict",
    "predict_throughput",
    "profiled_link",
    "simulate",
    "target_link",
]
