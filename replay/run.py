"""One prediction from a step-graph file to an output folder: what ``replay predict`` does.

Loads the graph, builds the link, predicts, records a short timeline per worker count and
writes everything; the CLI only parses arguments into a ``PredictRequest``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from replay.engine.link import DEFAULT_MTU, target_link
from replay.report import format_table, write_outputs
from replay.sweep import Prediction, ReplaySettings, check_settings, check_workers, predict, record_timeline
from replay.timeline import chrome_trace
from tracetool.errors import ToolError
from tracetool.graph.stepgraph import load_stepgraph
from tracetool.outputs import check_output_folder, output_folder

# Timelines hold the first few steps; past this many op events they hold fewer steps.
TIMELINE_STEPS = 3
TIMELINE_EVENT_BUDGET = 150_000


@dataclass(frozen=True)
class PredictRequest:
    graph_path: Path
    workers: list[int]
    out_dir: Path
    bandwidth_bps: float | None = None  # None: the profiled link
    latency_s: float = 0.0
    worker_bandwidth_bps: float | None = None
    worker_bandwidths_bps: tuple[float, ...] = ()  # the first workers' own interfaces
    mtu: int = DEFAULT_MTU
    contention_efficiency: float = 1.0
    reverse_efficiencies: tuple[float, float] = (1.0, 1.0)  # (download, upload), from a link profile's step fits
    contention_by_workers: tuple[tuple[int, float], ...] = ()  # (workers, efficiency), from the step fits too
    request_queue_s: float = 0.0  # a deep upload queue that requests wait behind, from a link profile
    burst_bytes: float = 0.0  # a token bucket in front of each direction (LinkConfig.burst_bytes)
    # (workers, download, upload) reverse efficiencies of counts the step fits relaxed
    reverse_by_workers: tuple[tuple[int, float, float], ...] = ()
    settings: ReplaySettings = field(default_factory=ReplaySettings)
    timelines: bool = True
    timeline_steps: int = TIMELINE_STEPS


@dataclass(frozen=True)
class PredictOutcome:
    prediction: Prediction
    table: str
    files: list[Path]


def timeline_steps_for(workers: int, nodes: int, wanted: int = TIMELINE_STEPS) -> int:
    """Steps per worker a timeline shows: as many as wanted, as long as the viewers can load it."""
    return max(1, min(wanted, TIMELINE_EVENT_BUDGET // max(1, workers * nodes)))


def run_predict(request: PredictRequest) -> PredictOutcome:
    """Predict throughput for every worker count and write the report files into ``out_dir``."""
    workers = check_workers(request.workers)
    check_settings(request.settings)
    if request.timeline_steps < 1:
        raise ToolError(f"--timeline-steps {request.timeline_steps}: a timeline shows at least 1 step per worker")
    check_output_folder(request.out_dir)
    graph = load_stepgraph(request.graph_path)
    link = target_link(graph, request.bandwidth_bps, request.latency_s, request.worker_bandwidth_bps, request.mtu,
                       request.contention_efficiency, request.worker_bandwidths_bps, request.reverse_efficiencies,
                       request.contention_by_workers, request.request_queue_s, request.burst_bytes,
                       request.reverse_by_workers)
    prediction = predict(graph, workers, link, request.settings)
    timelines = {}
    if request.timelines:
        for n in workers:
            steps = timeline_steps_for(n, len(graph.nodes), request.timeline_steps)
            result, compiled, _ = record_timeline(
                graph, n, link, request.settings, steps=steps, calibration=prediction.calibration
            )
            assert result.timeline is not None
            timelines[n] = chrome_trace(
                result.timeline,
                compiled,
                n,
                metadata={
                    "model": graph.model.get("name", ""),
                    "workers": n,
                    "steps_shown": steps,
                    "bandwidth_bps": link.download_bandwidth_bps,
                    "sharing": request.settings.sharing,
                    "order": request.settings.order,
                    "compute_scale": prediction.calibration.compute_scale,
                },
            )
    out_dir = Path(os.path.abspath(request.out_dir))
    with output_folder(out_dir, "replay predict") as staging:
        files = [out_dir / path.relative_to(staging) for path in write_outputs(staging, prediction, timelines)]
    return PredictOutcome(prediction, format_table(prediction), files)
