"""The compiled kernel replays a link whose lone transfers slow under the other direction's load
(a deep buffer's reverse efficiencies) exactly as the reference engine does."""

from __future__ import annotations

from dataclasses import replace

import pytest

from replay.engine.compiled import compile_graph
from replay.engine.kernel import kernel_unavailable, simulate_fast, unsupported_setting
from replay.engine.link import target_link
from replay.engine.loop import DurationModel, one_step_time_s, simulate
from replay.engine.sharing import FairSharing, FifoSharing, SenioritySharing
from tests.conftest import TRACES_DIR
from tests.replay.engine.test_kernel import assert_same_run
from tracetool.graph.stepgraph import load_stepgraph

needs_numba = pytest.mark.skipif(kernel_unavailable() is not None, reason="numba cannot run here")


@needs_numba
@pytest.mark.parametrize("contention", [1.0, 0.9])
@pytest.mark.parametrize("sharing", [FairSharing(), FifoSharing(),
                                     SenioritySharing(seniority=2.0, overtake=0.4, overtake_time_s=0.04)],
                         ids=["fair", "fifo", "seniority"])
@pytest.mark.parametrize("model", ["alexnet", "resnet", "inception"])
def test_kernel_equals_reference_under_reverse_load(model: str, sharing: object, contention: float):
    """Three staggered workers with sampled durations: lone transfers at 70% (downloads) and 95%
    (uploads) under the other direction's load, with and without contention loss."""
    graph = load_stepgraph(TRACES_DIR / model / "graph.json")
    compiled = compile_graph(graph)
    link = replace(target_link(graph, 5e7, latency_s=0.005, contention_efficiency=contention),
                   download_reverse_efficiency=0.7, upload_reverse_efficiency=0.95)
    assert unsupported_setting(sharing=sharing) is None
    kwargs = dict(sharing=sharing, durations=DurationModel(deterministic=False), measured_steps=4, warmup_steps=2,
                  seed=3, stagger_s=one_step_time_s(compiled, link, sharing=sharing))
    kernel, reference = simulate_fast(compiled, 3, link, **kwargs), simulate(compiled, 3, link, **kwargs)
    assert_same_run(kernel, reference)
    # the setting is in effect: without it the same run ends elsewhere
    plain = simulate_fast(compiled, 3, replace(link, download_reverse_efficiency=1.0, upload_reverse_efficiency=1.0),
                          **kwargs)
    assert plain.end_time_s != kernel.end_time_s
