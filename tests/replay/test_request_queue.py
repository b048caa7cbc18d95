"""Parameter requests that wait behind other workers' gradients in a deep upload queue
(``LinkConfig.request_queue_s``): the reference engine holds them, the kernel leaves them to it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from replay.engine.compiled import KIND_DOWNLOAD, compile_graph
from replay.engine.kernel.support import unsupported_setting
from replay.engine.link import REQUEST_QUEUE_GROWTH, LinkConfig
from replay.engine.loop import DurationModel, one_step_time_s, simulate
from replay.sweep import ReplaySettings, predict
from replay.synthetic import chain_graph
from tracetool.errors import ToolError

# 1 MB each way at 100mbit: 80 ms per transfer, 10 ms of compute between them
GRAPH = chain_graph(compute_us=10_000.0, download_bytes=1_000_000, upload_bytes=1_000_000)
LINK = LinkConfig(download_bandwidth_bps=100e6, upload_bandwidth_bps=100e6, latency_s=0.001)
DEEP = replace(LINK, request_queue_s=0.05)


def _run(link: LinkConfig, workers: int, seed: int = 0, record: int = 0):
    return simulate(compile_graph(GRAPH), workers, link, durations=DurationModel(deterministic=True),
                    measured_steps=30, warmup_steps=3, seed=seed, record_steps=record, stagger_s=0.045)


def _download_delays(link: LinkConfig) -> list[float]:
    """How long after its step began each recorded step's download joined the link."""
    compiled = compile_graph(GRAPH)
    result = _run(link, 2, record=8)
    assert result.timeline is not None
    begun = {(w, step): start for w, step, start, _, _ in result.timeline.steps}
    return [admitted - begun[(w, step)] for w, node, _, admitted, _, _, step in result.timeline.transfers
            if compiled.kind[node] == KIND_DOWNLOAD and (w, step) in begun]


def test_a_lone_worker_never_waits_behind_its_own_gradients():
    compiled = compile_graph(GRAPH)
    assert one_step_time_s(compiled, DEEP) == pytest.approx(one_step_time_s(compiled, LINK))
    assert _run(DEEP, 1).steps_per_second == pytest.approx(_run(LINK, 1).steps_per_second)


def test_requests_wait_behind_the_other_workers_upload_up_to_the_request_queue():
    assert max(_download_delays(LINK)) == 0.0
    delays = _download_delays(DEEP)
    assert max(delays) > 0.005  # some step began while the other worker was uploading
    assert max(delays) <= DEEP.request_queue_s + 1e-9
    assert _run(DEEP, 2).steps_per_second < _run(LINK, 2).steps_per_second


def test_the_wait_grows_with_how_long_the_other_upload_has_been_sending():
    # a queue deeper than any backlog: the wait is the growth times the other upload's age, and
    # that age is at most one upload (80 ms at the fair half rate: 160 ms)
    delays = _download_delays(replace(LINK, request_queue_s=10.0))
    assert 0.0 < max(delays) <= REQUEST_QUEUE_GROWTH * 0.16 + 1e-9


def test_the_links_growth_bounds_the_wait_in_place_of_the_fitted_one():
    deep = replace(LINK, request_queue_s=10.0)
    slow = _download_delays(replace(deep, request_queue_growth=0.05))
    fast = _download_delays(replace(deep, request_queue_growth=1.0))
    assert 0.0 < max(slow) <= 0.05 * 0.16 + 1e-9
    assert max(fast) > 2 * max(slow)


@pytest.mark.parametrize("growth", [0.0, -0.1, 11.0])
def test_an_impossible_growth_is_refused(growth: float):
    with pytest.raises(ToolError, match="request queue growth must be in"):
        replace(LINK, request_queue_growth=growth)


def test_a_chain_whose_download_follows_no_ps_op_replays_on_the_reference_engine():
    compiled = compile_graph(GRAPH)
    assert unsupported_setting(link=DEEP, compiled=compiled) is not None
    assert unsupported_setting(link=LINK, compiled=compiled) is None
    auto = predict(GRAPH, [1, 2], DEEP, ReplaySettings(seeds=1, measured_steps=10))
    python = predict(GRAPH, [1, 2], DEEP, ReplaySettings(seeds=1, measured_steps=10, engine="python"))
    assert [p.steps_per_second for p in auto.points] == [p.steps_per_second for p in python.points]
    with pytest.raises(ToolError, match="--engine compiled: a request queue on a graph with a download no PS op"):
        predict(GRAPH, [2], DEEP, ReplaySettings(seeds=1, measured_steps=10, engine="compiled"))


def test_an_impossible_request_queue_is_refused():
    with pytest.raises(ToolError, match="request queue"):
        replace(LINK, request_queue_s=-0.1)


def test_the_recorded_waits_are_the_delays_of_the_steps_downloads_and_are_drawn():
    """Each recorded request wait is how long that step's download joined the link after the step
    began (the chain's download follows no PS op, so the wait alone delays it), and the synthetic
    timeline names it as a slice beside the step."""
    from replay.timeline import chrome_trace

    compiled = compile_graph(GRAPH)
    result = _run(DEEP, 2, record=8)
    assert result.timeline is not None
    waits = {(w, step): wait for w, step, _, wait in result.timeline.request_waits}
    # every step but each worker's first, which starts before any gradient is on the link
    assert sorted(waits) == [(w, step) for w in range(2) for step in range(1, 8)]
    assert max(waits.values()) > 0.005
    begun = {(w, step): start for w, step, start, _, _ in result.timeline.steps}
    for w, node, _, admitted, _, _, step in result.timeline.transfers:
        if compiled.kind[node] == KIND_DOWNLOAD and (w, step) in begun:
            assert admitted - begun[(w, step)] == pytest.approx(waits.get((w, step), 0.0), abs=1e-9)
    drawn = [e for e in chrome_trace(result.timeline, compiled, 2)["traceEvents"] if e.get("cat") == "RequestQueue"]
    assert len(drawn) == sum(1 for wait in waits.values() if wait > 0.0)
    assert max(e["args"]["wait_ms"] for e in drawn) == pytest.approx(max(waits.values()) * 1e3)
    assert _run(LINK, 2, record=8).timeline.request_waits == []
