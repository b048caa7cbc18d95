"""The compiled kernel replays parameter requests that wait behind other workers' gradients in a
deep upload queue (``LinkConfig.request_queue_s``) exactly as the reference engine does."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from replay.engine.compiled import compile_graph
from replay.engine.kernel import simulate_fast, unsupported_setting
from replay.engine.link import target_link
from replay.engine.loop import DurationModel, one_step_time_s, simulate
from replay.engine.sharing import FairSharing, FifoSharing, SenioritySharing
from replay.sync.disciplines import sync_discipline
from replay.synthetic import chain_graph, random_graph
from tests.conftest import TRACES_DIR
from tests.replay.engine.test_kernel import assert_same_run, needs_numba
from tracetool.graph.stepgraph import load_stepgraph


@needs_numba
@pytest.mark.parametrize("sharing", [FairSharing(), FifoSharing(),
                                     SenioritySharing(seniority=2.0, overtake=0.4, overtake_time_s=0.04)],
                         ids=["fair", "fifo", "seniority"])
@pytest.mark.parametrize("model", ["alexnet", "inception"])
def test_kernel_equals_reference_with_a_request_queue(model: str, sharing: object):
    """Three staggered workers with sampled durations behind a 70 ms request queue at 25mbit."""
    graph = load_stepgraph(TRACES_DIR / model / "graph.json")
    compiled = compile_graph(graph)
    link = replace(target_link(graph, 25e6, latency_s=0.005, contention_efficiency=0.85), request_queue_s=0.07)
    assert unsupported_setting(sharing=sharing, link=link, compiled=compiled) is None
    kwargs = dict(sharing=sharing, durations=DurationModel(deterministic=False), measured_steps=4, warmup_steps=2,
                  seed=5, stagger_s=one_step_time_s(compiled, link, sharing=sharing))
    kernel, reference = simulate_fast(compiled, 3, link, **kwargs), simulate(compiled, 3, link, **kwargs)
    assert_same_run(kernel, reference)
    if not isinstance(sharing, FifoSharing):
        # the wait is in effect: without it the same run ends elsewhere (one transfer at a time,
        # a step's downloads queue behind the others' anyway, and fifo's runs may not change)
        assert simulate_fast(compiled, 3, replace(link, request_queue_s=0.0), **kwargs).end_time_s != kernel.end_time_s


@needs_numba
def test_kernel_takes_the_links_growth():
    """A link's own growth reaches the kernel as it reaches the reference engine."""
    graph = load_stepgraph(TRACES_DIR / "inception" / "graph.json")
    compiled = compile_graph(graph)
    link = replace(target_link(graph, 25e6, latency_s=0.005), request_queue_s=0.07, request_queue_growth=1.0)
    kwargs = dict(sharing=FairSharing(), durations=DurationModel(), measured_steps=4, warmup_steps=2, seed=1,
                  stagger_s=one_step_time_s(compiled, link))
    kernel = simulate_fast(compiled, 2, link, **kwargs)
    assert_same_run(kernel, simulate(compiled, 2, link, **kwargs))
    slower = simulate_fast(compiled, 2, replace(link, request_queue_growth=0.05), **kwargs)
    assert slower.end_time_s != kernel.end_time_s


@needs_numba
@pytest.mark.parametrize("discipline", ["async", "backup", "cutoff"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kernel_equals_reference_with_a_request_queue_on_random_graphs(seed: int, discipline: str):
    """Random layered steps (every download follows its PS read), with a discipline that holds
    workers back (backup) or interrupts steps (cutoff), whose uploads then finish as zombies."""
    graph = random_graph(random.Random(seed), layers=5, lanes=2)
    compiled = compile_graph(graph)
    link = replace(target_link(graph, 2e7, latency_s=0.001), request_queue_s=0.05)
    rule = sync_discipline("cutoff", cutoff="dynamic") if discipline == "cutoff" else sync_discipline(discipline)
    kwargs = dict(sharing=SenioritySharing(), durations=DurationModel(), measured_steps=6, warmup_steps=1, seed=seed,
                  stagger_s=0.01, discipline=rule)
    assert_same_run(simulate_fast(compiled, 4, link, **kwargs), simulate(compiled, 4, link, **kwargs))


def test_a_graph_whose_downloads_follow_no_ps_op_stays_with_the_reference():
    compiled = compile_graph(chain_graph())
    link = replace(target_link(chain_graph(), 1e8), request_queue_s=0.05)
    assert "no PS op" in unsupported_setting(link=link, compiled=compiled)
    assert unsupported_setting(link=replace(link, request_queue_s=0.0), compiled=compiled) is None
