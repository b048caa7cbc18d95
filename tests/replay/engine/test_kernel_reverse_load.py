"""The compiled kernel replays a link whose directions slow each other (reverse efficiencies of a
deep buffer) exactly as the reference engine does."""

from __future__ import annotations

from dataclasses import replace

import pytest

from replay.engine.compiled import compile_graph
from replay.engine.kernel import kernel_unavailable, simulate_fast
from replay.engine.link import target_link
from replay.engine.loop import DurationModel, one_step_time_s, simulate
from replay.engine.sharing import FairSharing, FifoSharing, SenioritySharing
from tests.conftest import TRACES_DIR
from tests.replay.engine.test_kernel import assert_same_run
from tracetool.graph.stepgraph import load_stepgraph

needs_numba = pytest.mark.skipif(kernel_unavailable() is not None, reason="numba cannot run here")


@needs_numba
@pytest.mark.parametrize("sharing", [FairSharing(), FifoSharing(),
                                     SenioritySharing(seniority=2.0, overtake=0.4, overtake_time_s=0.04)],
                         ids=["fair", "fifo", "seniority"])
@pytest.mark.parametrize("model", ["alexnet", "resnet"])
def test_kernel_equals_reference_under_reverse_load(model: str, sharing: object):
    graph = load_stepgraph(TRACES_DIR / model / "graph.json")
    compiled = compile_graph(graph)
    link = replace(target_link(graph, 5e7, latency_s=0.005, contention_efficiency=0.9),
                   download_reverse_efficiency=0.7, upload_reverse_efficiency=0.95)
    kwargs = dict(sharing=sharing, durations=DurationModel(deterministic=False), measured_steps=4, warmup_steps=2,
                  seed=3, stagger_s=one_step_time_s(compiled, link, sharing=sharing))
    kernel, reference = simulate_fast(compiled, 3, link, **kwargs), simulate(compiled, 3, link, **kwargs)
    assert_same_run(kernel, reference)
    slower = simulate(compiled, 3, replace(link, download_reverse_efficiency=0.5), **kwargs)
    assert slower.steps_per_second < reference.steps_per_second
