"""A link whose lone transfers slow under the other direction's load (a deep buffer's reverse
efficiencies) replays on the reference engine: the kernel names the setting, and the default
engine choice falls back to the reference with the same prediction."""

from __future__ import annotations

from dataclasses import replace

from replay.engine.kernel import unsupported_setting
from replay.engine.link import target_link
from replay.sweep import ReplaySettings, predict
from tests.conftest import TRACES_DIR
from tracetool.graph.stepgraph import load_stepgraph


def test_the_kernel_names_reverse_efficiencies_and_auto_replays_them_as_the_reference():
    graph = load_stepgraph(TRACES_DIR / "alexnet" / "graph.json")
    link = replace(target_link(graph, 5e7, latency_s=0.005, contention_efficiency=0.9),
                   download_reverse_efficiency=0.7, upload_reverse_efficiency=0.95)
    assert "reverse efficiencies" in unsupported_setting(workers=3, link=link)
    assert unsupported_setting(workers=3, link=replace(link, download_reverse_efficiency=1.0,
                                                       upload_reverse_efficiency=1.0)) is None
    settings = ReplaySettings(seeds=2, measured_steps=6)
    auto = predict(graph, [1, 3], link, settings)
    reference = predict(graph, [1, 3], link, replace(settings, engine="python"))
    assert [p.steps_per_second for p in auto.points] == [p.steps_per_second for p in reference.points]
    slower = predict(graph, [3], replace(link, download_reverse_efficiency=0.4), replace(settings, engine="python"))
    assert slower.points[0].steps_per_second < reference.points[1].steps_per_second
