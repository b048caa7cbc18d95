"""The pipeline and bunching regimes of seniority sharing (replay.regimes) on a zoo graph."""

from __future__ import annotations

import pytest

from replay import ReplaySettings, predict
from replay.engine.link import target_link
from replay.engine.sharing import DEFAULT_OVERTAKE, DEFAULT_OVERTAKE_TIME_S
from replay.regimes import overtaking_sharing, predict_regimes
from tests.conftest import REPO_ROOT
from tracetool.graph.stepgraph import load_stepgraph

ALEXNET = REPO_ROOT / "traces" / "alexnet" / "graph.json"
SETTINGS = ReplaySettings(seeds=2, measured_steps=30, jobs=1)


@pytest.fixture(scope="module")
def alexnet_at_50mbit():
    graph = load_stepgraph(ALEXNET)
    link = target_link(graph, 50e6, 0.005, contention_efficiency=0.95)
    return graph, link, predict_regimes(graph, [1, 3], link, SETTINGS), predict(graph, [1, 3], link, SETTINGS)


def test_three_workers_bunch_slower_than_they_pipeline(alexnet_at_50mbit):
    """Overtaking at every join costs three alexnet workers several percent of the link (measured
    runs: 2.17-2.23 bunching, 2.40-2.47 in a pipeline); one worker has nobody to overtake."""
    _, _, regimes, _ = alexnet_at_50mbit
    assert [r.workers for r in regimes] == [3]
    three = regimes[0]
    assert three.bunching < 0.95 * three.pipeline
    assert three.low == three.bunching_min and three.high == three.pipeline_max


def test_the_law_falls_between_its_regimes(alexnet_at_50mbit):
    """The default prediction overtakes at the law's chance, between never and always at the cap."""
    _, _, regimes, law = alexnet_at_50mbit
    three = regimes[0]
    assert three.low <= law.points[1].steps_per_second <= three.high
    assert three.covers(law.points[1].steps_per_second)
    assert not three.covers(1.2 * three.high)


def test_the_bunching_weight_is_the_laws_mean_chance_over_its_cap(alexnet_at_50mbit):
    """alexnet moves 1.16 MB each way: about 0.19 s at 50mbit's payload rate, a chance of
    40 ms / 0.19 s = 0.21 per join, so the bunching regime weighs 0.21 / 0.4."""
    graph, link, regimes, law = alexnet_at_50mbit
    seconds = 8 * law.download_bytes_per_step / link.download_payload_bps()
    expected = min(DEFAULT_OVERTAKE, DEFAULT_OVERTAKE_TIME_S / seconds) / DEFAULT_OVERTAKE
    assert regimes[0].bunching_chance == pytest.approx(expected, rel=0.02)
    assert 0.0 < regimes[0].bunching_chance < 1.0


def test_settings_without_overtaking_have_no_regimes():
    """Fair sharing, strict seniority and synchronous training (released groups) never overtake."""
    assert overtaking_sharing(ReplaySettings()) is not None
    assert overtaking_sharing(ReplaySettings(sharing="fair")) is None
    assert overtaking_sharing(ReplaySettings(overtake=0.0)) is None
    assert overtaking_sharing(ReplaySettings(sync="sync")) is None
