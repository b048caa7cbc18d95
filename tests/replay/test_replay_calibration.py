"""Tracing-overhead calibration, on synthetic graphs and on the committed zoo graphs (replay.calibration)."""

from __future__ import annotations

import pytest

from replay.calibration import calibrate_compute_scale
from replay.engine.compiled import compile_graph
from replay.engine.link import LinkConfig, profiled_link, target_link
from replay.sweep import ReplaySettings, predict_throughput
from replay.synthetic import chain_graph
from tests.conftest import TRACES_DIR, ZOO
from tracetool.graph.stepgraph import load_stepgraph

ZOO_GRAPHS = [TRACES_DIR / m / "graph.json" for m in ZOO if (TRACES_DIR / m / "graph.json").exists()]


def test_scale_makes_one_worker_take_the_untraced_step_time():
    """A chain with 10 ms of compute and an untraced step of 8 ms gets its compute scaled to 8 ms minus the link."""
    calibration = {"download_bandwidth_bps": 1e9, "upload_bandwidth_bps": 1e9, "per_transfer_overhead_s": 0.0}
    model = {"name": "chain", "batch_size": 8, "untraced_step_time_s": {"mean": 0.008, "std": 0.0, "samples": [0.008]}}
    graph = chain_graph(
        compute_us=10_000.0, download_bytes=125_000, upload_bytes=125_000, model=model, link_calibration=calibration
    )
    result = calibrate_compute_scale(compile_graph(graph), graph.model, profiled_link(graph))
    # The link takes 1 ms each way, so compute must take 6 ms: a scale of 0.6.
    assert result.compute_scale == pytest.approx(0.6, rel=1e-5)
    assert result.calibrated_step_time_s == pytest.approx(0.008, rel=1e-5)


def test_graph_without_untraced_time_keeps_scale_one():
    """A foreign graph with no untraced step time is replayed as traced, and says so."""
    graph = chain_graph(model={"name": "foreign"})
    result = calibrate_compute_scale(compile_graph(graph), graph.model, LinkConfig(1e9, 1e9))
    assert result.compute_scale == 1.0
    assert result.target_step_time_s is None
    assert "no untraced step time" in result.note


def test_link_slower_than_untraced_step_scales_to_zero():
    """When the profiled link alone exceeds the untraced step, the scale is zero and the note says why."""
    model = {"name": "chain", "untraced_step_time_s": {"mean": 0.001, "std": 0.0, "samples": [0.001]}}
    graph = chain_graph(model=model, link_calibration={"download_bandwidth_bps": 1e8, "upload_bandwidth_bps": 1e8})
    result = calibrate_compute_scale(compile_graph(graph), graph.model, profiled_link(graph))
    assert result.compute_scale == 0.0
    assert "longer than the untraced step" in result.note


@pytest.mark.skipif(not ZOO_GRAPHS, reason="no committed zoo step graphs under traces/")
@pytest.mark.parametrize("path", ZOO_GRAPHS, ids=[p.parent.name for p in ZOO_GRAPHS])
def test_one_worker_prediction_matches_untraced_rate_of_zoo_graph(path):
    """For every committed graph, one worker on the profiled link is within 5% of the measured untraced steps/s."""
    graph = load_stepgraph(path)
    measured = graph.model["untraced_steps_per_second"]
    settings = ReplaySettings(seeds=2, measured_steps=40)
    (point,) = predict_throughput(graph, [1], target_link(graph, None), settings)
    assert point.steps_per_second == pytest.approx(measured, rel=0.05)
