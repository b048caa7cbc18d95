"""The network-only link probe (tracetool.measure.link_probe): spans to link activity, the contention fit,
and a real probe on a shaped topology."""

from __future__ import annotations

import os

import pytest

from tests.conftest import needs_root
from tracetool.cluster import netns
from tracetool.errors import ToolError
from tracetool.measure.grpc_probe_code import split_bytes
from tracetool.measure.link_probe import (
    ProbePoint,
    fit_contention_efficiency,
    fit_link_efficiencies,
    probe_point,
    probe_window_s,
    summarize_spans,
)


def test_spans_of_two_workers_in_turns_keep_each_direction_busy_with_one_transfer():
    """Worker 0 downloads while worker 1 uploads and the other way round: each direction always
    carries exactly one transfer, and each worker completes one step per second."""
    w0 = [(float(t), t + 0.5, t + 0.5, t + 1.0) for t in range(0, 10)]
    w1 = [(t + 0.5, t + 1.0, t + 1.0, t + 1.5) for t in range(-1, 10)]
    point = summarize_spans([w0, w1], download_bytes=1000, upload_bytes=2000)
    assert point.workers == 2
    # the window both cover: from worker 0's first request (0 s) to worker 0's last upload end (10 s)
    assert point.window_s == pytest.approx(10.0)
    assert point.steps_per_second == pytest.approx(2.0, rel=0.02)
    assert point.down_busy == pytest.approx(1.0, abs=1e-3) and point.up_busy == pytest.approx(1.0, abs=1e-3)
    assert point.down_contended_s == pytest.approx(0.0, abs=1e-3)
    assert point.down_alone_s == pytest.approx(10.0, rel=1e-3)
    assert point.down_concurrent == pytest.approx(1.0)
    # every download runs while the other worker uploads, and the other way round
    assert point.down_alone_reverse_s == pytest.approx(10.0, rel=1e-3)
    assert point.up_alone_reverse_s == pytest.approx(10.0, rel=1e-3)


def test_spans_of_workers_in_lock_step_contend_and_leave_the_other_direction_idle():
    """Both workers download then upload at the same moments: two in flight half the time, none the other half."""
    lock_step = [(float(t), t + 0.5, t + 0.5, t + 1.0) for t in range(0, 10)]
    point = summarize_spans([lock_step, list(lock_step)], 1000, 1000)
    assert point.down_busy == pytest.approx(0.5, abs=1e-3)
    assert point.down_contended_s == pytest.approx(5.0, rel=1e-3)
    assert point.down_concurrent == pytest.approx(2.0)
    assert point.down_contended_reverse_s == 0.0 and point.up_contended_reverse_s == 0.0
    # 10 steps of each worker end in the window, 1000 bytes each
    assert point.down_bits == pytest.approx(2 * 10 * 8000)


def test_a_worker_without_two_steps_is_refused():
    with pytest.raises(ToolError, match="longer --probe-duration"):
        summarize_spans([[(0.0, 0.5, 0.5, 1.0)]], 1000, 1000)


def test_the_probe_window_grows_with_the_workers_and_their_step():
    """Short steps keep the 10 s window; mobilenet_v2 at 50mbit (3.1 s a step alone) gets three steps of
    each of 4 workers sharing the link, which the fixed 10 s window (0.4 steps/s for 3 workers) did not give."""
    assert probe_window_s(4, 0.5) == 10.0
    assert probe_window_s(4, 3.1) == pytest.approx(37.2)
    assert probe_window_s(1000, 10.0) == 3600.0


def _point(alone_s: float, contended_s: float, bits: float) -> ProbePoint:
    return ProbePoint(workers=2, steps_per_second=1.0, per_worker_steps_per_second=[0.5, 0.5], window_s=10.0,
                      down_alone_s=alone_s, down_contended_s=contended_s, down_bits=bits,
                      up_alone_s=alone_s, up_contended_s=contended_s, up_bits=bits,
                      down_busy=1.0, up_busy=1.0, down_concurrent=1.5, up_concurrent=1.5)


def test_contention_efficiency_is_the_contended_share_over_the_alone_share():
    """At 100 bit/s a direction delivering 98% alone and 88.2% while contended loses 10% to contention."""
    points = [_point(10.0, 0.0, 980.0), _point(4.0, 6.0, 0.98 * 400 + 0.882 * 600), _point(2.0, 8.0,
                                                                                       0.98 * 200 + 0.882 * 800)]
    e1, e2, efficiency = fit_contention_efficiency(points, payload_bps=100.0)
    assert e1 == pytest.approx(0.98)
    assert e2 == pytest.approx(0.882)
    assert efficiency == pytest.approx(0.9)


def test_no_contended_time_means_no_contention_loss():
    assert fit_contention_efficiency([_point(10.0, 0.0, 950.0)], payload_bps=100.0)[2] == 1.0


def _split_point(workers: int, q1: float, r1: float, q2: float, r2: float, e1: float, e_contended: float,
                 r_down: float, r_up: float) -> ProbePoint:
    """A point whose directions spent these seconds in each state and delivered what the model says
    (payload 100 bit/s): q quiet, r with the other direction busy; 1 one transfer, 2 two or more."""
    def bits(r: float) -> float:
        return 100.0 * (e1 * (q1 + r * r1) + e_contended * (q2 + r * r2))

    return ProbePoint(workers=workers, steps_per_second=1.0, per_worker_steps_per_second=[1.0 / workers] * workers,
                      window_s=10.0, down_alone_s=q1 + r1, down_contended_s=q2 + r2, down_bits=bits(r_down),
                      up_alone_s=q1 + r1, up_contended_s=q2 + r2, up_bits=bits(r_up), down_busy=1.0, up_busy=1.0,
                      down_concurrent=1.5, up_concurrent=1.5, down_alone_reverse_s=r1, down_contended_reverse_s=r2,
                      up_alone_reverse_s=r1, up_contended_reverse_s=r2)


def test_the_fit_tells_the_reverse_direction_s_cost_from_contention():
    """One worker shows the lone rate, two in turns mostly run under the other direction's load, three and
    four contend under it: the fit recovers a lone share of 0.98, a contention efficiency of 0.9 and
    downloads that keep 80% of their rate under uploads while uploads keep 97%."""
    truth = dict(e1=0.98, e_contended=0.98 * 0.9, r_down=0.8, r_up=0.97)
    points = [_split_point(1, 5.0, 0.0, 0.0, 0.0, **truth), _split_point(2, 1.0, 7.0, 0.5, 0.5, **truth),
              _split_point(3, 0.5, 2.0, 1.0, 6.0, **truth), _split_point(4, 0.2, 1.0, 0.8, 8.0, **truth)]
    fit = fit_link_efficiencies(points, payload_bps=100.0)
    assert fit.alone_share == pytest.approx(0.98, rel=1e-6)
    assert fit.contention_efficiency == pytest.approx(0.9, rel=1e-6)
    assert fit.download_reverse_efficiency == pytest.approx(0.8)
    assert fit.upload_reverse_efficiency == pytest.approx(0.97)


def test_probes_without_reverse_time_keep_the_contention_fit():
    """Points written before the split (no reverse seconds) fit as before, with no reverse cost."""
    points = [_point(10.0, 0.0, 980.0), _point(4.0, 6.0, 0.98 * 400 + 0.882 * 600)]
    fit = fit_link_efficiencies(points, payload_bps=100.0)
    assert (fit.download_reverse_efficiency, fit.upload_reverse_efficiency) == (1.0, 1.0)
    assert fit.contention_efficiency == pytest.approx(0.9)


@pytest.mark.cluster
@needs_root
@pytest.mark.parametrize("transport", ["tcp", "grpc"])
def test_real_probe_of_two_workers_takes_turns_on_a_shaped_link(transport: str):
    """Two workers on a 20mbit link, 400 kB each way, over either transport: one worker is bound
    by its own transfers, two fall into turns and come close to twice its rate; a lone transfer
    delivers about the payload rate; nothing of the topology is left behind.
    (The shaper's 16 kB bucket, full after every idle moment, lets a lone worker pass a few
    percent over the payload rate. Two workers that start together may bunch before they fall
    into turns, and a cluster can keep bunching for a whole window, as the zoo's two-worker runs
    do now and then: a 6-second window once caught them at 1.40 times one worker's rate. So each
    window must read at least fair sharing's 1.2 times one worker (1.2 to 1.4 in the replay's
    fair sharing of the zoo's steps), and one of up to three fresh clusters must fall into turns,
    above 1.5 times.)"""
    payload_bps = 20e6 * 1448 / 1514
    one = probe_point(20e6, 400_000, 400_000, 1, duration_s=3.0, warmup_s=1.0, transport=transport)
    speedups: list[float] = []
    for _ in range(3):
        two = probe_point(20e6, 400_000, 400_000, 2, duration_s=6.0, warmup_s=1.0, transport=transport)
        speedups.append(two.steps_per_second / one.steps_per_second)
        if speedups[-1] > 1.5:
            break
    bound_one = payload_bps / (8 * 2 * 400_000)  # one worker: both transfers back to back
    assert 0.8 * bound_one < one.steps_per_second < 1.08 * bound_one
    assert all(1.2 < speedup < 2.1 for speedup in speedups), speedups
    assert speedups[-1] > 1.5, speedups
    assert one.down_contended_s == 0.0 and 0.3 < one.down_busy < 0.6
    assert two.down_busy > 0.7 and two.up_busy > 0.7
    # alone, a transfer's span carries the payload rate, less its request's round trip
    alone_share, _, _ = fit_contention_efficiency([one, two], payload_bps)
    assert 0.85 < alone_share < 1.1
    assert not [n for n in netns.list_namespaces() if n.startswith(f"{netns.NAMESPACE_PREFIX}{os.getpid()}-")]


def test_grpc_tensors_split_the_step_s_bytes_without_an_empty_one():
    assert split_bytes(1_000_003) == [125_001, 125_001, 125_001, 125_000, 125_000, 125_000, 125_000, 125_000]
    assert sum(split_bytes(1_000_003)) == 1_000_003
    assert split_bytes(3) == [1, 1, 1]
    assert split_bytes(10, parts=1) == [10]


def test_an_unknown_transport_is_refused():
    with pytest.raises(ToolError, match="unknown probe transport 'udp'"):
        probe_point(20e6, 1000, 1000, 1, duration_s=1.0, warmup_s=0.0, transport="udp")
