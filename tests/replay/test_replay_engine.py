"""The event loop's semantics on graphs with known answers (replay.engine.loop)."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.engine.compiled import KIND_DOWNLOAD, KIND_UPLOAD, compile_graph, critical_path_us
from replay.engine.link import LinkConfig, target_link
from replay.engine.loop import DurationModel, simulate
from replay.engine.sharing import FairSharing, FifoSharing, SenioritySharing, sharing_model
from replay.sweep import ReplaySettings, predict
from replay.synthetic import chain_graph, random_graph
from tracetool.errors import ToolError

FAST = LinkConfig(1e15, 1e15)
DETERMINISTIC = DurationModel(deterministic=True)


def step_rate(graph, workers, link, **kwargs) -> float:
    kwargs.setdefault("durations", DETERMINISTIC)
    kwargs.setdefault("measured_steps", 10)
    return simulate(compile_graph(graph), workers, link, **kwargs).steps_per_second


def test_one_worker_chain_takes_its_known_time():
    """One worker on a chain takes download + compute + upload + update, with link time and overheads."""
    graph = chain_graph(compute_us=2000.0, download_bytes=125_000, upload_bytes=250_000, ps_update_us=500.0)
    link = LinkConfig(1e8, 1e8, latency_s=0.001, per_transfer_overhead_s=0.0002)
    expected_s = (0.01 + 0.0012) + 0.002 + (0.02 + 0.0012) + 0.0005
    assert step_rate(graph, 1, link) == pytest.approx(1.0 / expected_s, rel=1e-9)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), layers=st.integers(1, 5))
def test_one_worker_equals_critical_path_when_nothing_is_shared(seed, layers):
    """With every op on its own lane and an unlimited link, one worker's step is the critical path."""
    graph = random_graph(random.Random(seed), layers=layers, lanes=1)
    # Give every worker op its own lane so lanes never serialize anything.
    graph.nodes = [
        replace(n, lane=f"{n.lane.split('#')[0]}#thread:{n.id}") if n.kind == "compute" else n for n in graph.nodes
    ]
    # PS ops share one PS lane; give each its own device so they never queue either.
    graph.nodes = [
        replace(n, device=f"/job:ps/replica:0/task:0/device:CPU:{n.id}") if n.kind == "ps_compute" else n
        for n in graph.nodes
    ]
    compiled = compile_graph(graph)
    transfer_us = [8e6 * b / FAST.download_bandwidth_bps for b in compiled.bytes]
    expected_us = critical_path_us(compiled, transfer_us)[compiled.end]
    rate = simulate(compiled, 1, FAST, durations=DETERMINISTIC, measured_steps=3, warmup_steps=0).steps_per_second
    assert 1.0 / rate == pytest.approx(expected_us * 1e-6, rel=1e-6, abs=1e-9)


def test_critical_path_includes_known_transfer_times():
    """Transfer times on an uncontended link add to the critical path like any other op."""
    graph = random_graph(random.Random(7), layers=3)
    compiled = compile_graph(graph)
    link = LinkConfig(1e9, 1e9)
    transfer_us = [
        8e6 * b / 1e9 if k in (KIND_DOWNLOAD, KIND_UPLOAD) else 0.0
        for b, k in zip(compiled.bytes, compiled.kind, strict=True)
    ]
    lower_bound_us = critical_path_us(compiled, transfer_us)[compiled.end]
    rate = simulate(compiled, 1, link, durations=DETERMINISTIC, measured_steps=3, warmup_steps=0).steps_per_second
    # One lane serializes compute, and transfers of one worker share the link: never faster than the path.
    assert 1.0 / rate >= lower_bound_us * 1e-6 * (1 - 1e-9)


def test_link_bound_case_saturates_at_bandwidth_over_bytes_per_step():
    """With negligible compute, many workers reach downlink bandwidth / bits per step and no more."""
    graph = chain_graph(compute_us=10.0, download_bytes=1_000_000, upload_bytes=1_000)
    link = LinkConfig(1e8, 1e8)
    bound = 1e8 / 8e6
    rate = step_rate(graph, 16, link, durations=DurationModel(), measured_steps=20, stagger_s=0.08)
    # The window opens and closes on step ends, so it may hold part of a step more than the link carried.
    assert rate <= bound * (1 + 1 / (16 * 20))
    assert rate == pytest.approx(bound, rel=0.02)


def test_fifo_link_bound_case_saturates_too():
    """Under fifo sharing the link-bound throughput is the same bandwidth / bits per step."""
    graph = chain_graph(compute_us=10.0, download_bytes=1_000_000, upload_bytes=1_000_000)
    rate = step_rate(graph, 8, LinkConfig(1e8, 1e8), sharing=FifoSharing(), measured_steps=20)
    assert rate == pytest.approx(1e8 / 8e6, rel=0.02)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), workers=st.integers(2, 6), bandwidth=st.sampled_from([1e7, 1e8, 1e9]))
def test_throughput_never_exceeds_n_times_one_worker(seed, workers, bandwidth):
    """N workers never do more than N times the steps of one worker."""
    graph = random_graph(random.Random(seed), layers=3, lanes=2)
    link = LinkConfig(bandwidth, bandwidth, per_transfer_overhead_s=1e-4)
    one = step_rate(graph, 1, link)
    many = step_rate(graph, workers, link, stagger_s=1.0 / one)
    # Allow the window's boundary effect: at most part of one step in the measured steps.
    assert many <= workers * one * (1 + 1 / (workers * 10))


def test_throughput_never_falls_when_bandwidth_grows():
    """More bandwidth never lowers the predicted throughput of a worker count."""
    graph = random_graph(random.Random(3), layers=4, lanes=1, max_bytes=2_000_000)
    for workers in (1, 4):
        rates = []
        for bandwidth in (1e7, 3e7, 1e8, 3e8, 1e9, 1e10):
            link = LinkConfig(bandwidth, bandwidth)
            one = step_rate(graph, 1, link)
            rates.append(step_rate(graph, workers, link, stagger_s=1.0 / one))
        assert all(b >= a * (1 - 1e-3) for a, b in zip(rates, rates[1:], strict=False)), rates


def test_fixed_seed_reproduces_the_run():
    """Two replays with the same seed give identical results; another seed differs."""
    graph = random_graph(random.Random(5), layers=3)
    compiled = compile_graph(graph)
    link = LinkConfig(1e8, 1e8)
    runs = [simulate(compiled, 4, link, seed=s, measured_steps=10, stagger_s=0.05) for s in (11, 11, 12)]
    assert runs[0] == runs[1]
    assert runs[0].steps_per_second != runs[2].steps_per_second


def test_fifo_and_fair_agree_when_transfers_never_overlap():
    """One worker on a chain never has two transfers in one direction at once, so fifo equals fair."""
    graph = chain_graph(compute_us=(900.0, 1100.0, 1000.0), download_bytes=300_000, upload_bytes=200_000)
    link = LinkConfig(1e8, 5e7, latency_s=1e-4)
    fair = simulate(compile_graph(graph), 1, link, sharing=FairSharing(), seed=3, measured_steps=20)
    fifo = simulate(compile_graph(graph), 1, link, sharing=FifoSharing(), seed=3, measured_steps=20)
    assert fifo.steps_per_second == pytest.approx(fair.steps_per_second, rel=1e-9)


def test_fair_with_one_stream_equals_fifo():
    """Fair sharing capped at one concurrent transfer serves like fifo."""
    graph = random_graph(random.Random(9), layers=4)
    compiled = compile_graph(graph)
    link = LinkConfig(1e8, 1e8)
    fifo = simulate(compiled, 3, link, sharing=FifoSharing(), seed=1, measured_steps=10, stagger_s=0.01)
    capped = simulate(compiled, 3, link, sharing=FairSharing(max_streams=1), seed=1, measured_steps=10, stagger_s=0.01)
    assert capped.steps_per_second == pytest.approx(fifo.steps_per_second, rel=1e-9)


def test_step_time_breakdown_adds_up_to_the_step_time():
    """Compute, waiting for parameters and waiting for the link add up to the mean step time."""
    graph = random_graph(random.Random(2), layers=4)
    result = simulate(compile_graph(graph), 4, LinkConfig(1e8, 1e8), measured_steps=15, stagger_s=0.02)
    parts = result.compute_s + result.waiting_for_parameters_s + result.waiting_for_link_s
    assert parts == pytest.approx(result.step_time_s, rel=1e-6)


def test_utilizations_stay_between_zero_and_one():
    """Link and PS utilizations are fractions, and a saturated downlink is close to one."""
    graph = chain_graph(compute_us=10.0, download_bytes=1_000_000, upload_bytes=10)
    result = simulate(compile_graph(graph), 8, LinkConfig(1e8, 1e8), measured_steps=10, durations=DETERMINISTIC)
    for value in (result.downlink_utilization, result.uplink_utilization, result.ps_utilization):
        assert 0.0 <= value <= 1.0 + 1e-9
    assert result.downlink_utilization == pytest.approx(1.0, rel=0.01)


def test_worker_interface_slower_than_the_ps_caps_one_worker():
    """A worker whose own interface is slower than the PS's gets at most its own bandwidth."""
    graph = chain_graph(compute_us=0.0, download_bytes=1_000_000, upload_bytes=0)
    link = LinkConfig(1e9, 1e9, worker_bandwidth_bps=1e8)
    assert step_rate(graph, 1, link) == pytest.approx(1e8 / 8e6, rel=1e-6)


def test_target_link_saturates_at_the_payload_share_of_the_line_rate():
    """A line rate of 100 Mbit/s at MTU 1500 carries 1448/1514 of it as tensor bytes: the
    link-bound throughput is that payload rate over the bits per step, and jumbo frames lose less."""
    graph = chain_graph(compute_us=10.0, download_bytes=1_000_000, upload_bytes=1_000)
    link = target_link(graph, 1e8)
    assert link.payload_efficiency == pytest.approx(1448 / 1514)
    rate = step_rate(graph, 16, link, durations=DurationModel(), measured_steps=20, stagger_s=0.08)
    assert rate == pytest.approx(1e8 * 1448 / 1514 / 8e6, rel=0.02)
    jumbo = target_link(graph, 1e8, mtu=9000)
    assert link.payload_efficiency < jumbo.payload_efficiency == pytest.approx(8948 / 9014)


def test_profiled_link_is_already_a_payload_rate():
    """Rates calibrated from the trace's transfers are payload rates; no headers come off them."""
    graph = chain_graph(link_calibration={"download_bandwidth_bps": 5e8, "upload_bandwidth_bps": 4e8})
    link = target_link(graph, None)
    assert (link.download_payload_bps(), link.upload_payload_bps()) == (5e8, 4e8)


@pytest.mark.parametrize("mtu", [0, 40, 70_000])
def test_impossible_mtu_is_refused(mtu):
    with pytest.raises(ToolError, match="MTU"):
        target_link(chain_graph(), 1e8, mtu=mtu)


def test_two_workers_in_turns_reach_the_link_bound_that_fair_sharing_misses():
    """Download 1 MB, upload 1 MB, negligible compute: one worker uses each direction half the time.
    Under seniority two workers settle into turns (one downloads while the other uploads) and
    double the rate; under fair sharing, starting together, they stay in lock-step and gain nothing."""
    graph = chain_graph(compute_us=10.0, download_bytes=1_000_000, upload_bytes=1_000_000)
    link = LinkConfig(8e7, 8e7)  # 10 MB/s: 0.1 s per direction per step
    one = step_rate(graph, 1, link)
    assert one == pytest.approx(1 / 0.20001, rel=1e-3)
    in_turns = step_rate(graph, 2, link, sharing=SenioritySharing(2.0), measured_steps=40)
    lock_step = step_rate(graph, 2, link, sharing=FairSharing(), measured_steps=40)
    assert in_turns == pytest.approx(2 * one, rel=0.02)
    assert lock_step == pytest.approx(one, rel=0.02)


def test_workers_in_turns_lose_the_line_share_of_each_others_acks():
    """With both directions busy all the time, each carries the other's ACKs (here 5% of the line):
    two workers in turns reach 95% of twice the one-worker rate, which never overlaps directions."""
    graph = chain_graph(compute_us=10.0, download_bytes=1_000_000, upload_bytes=1_000_000)
    link = LinkConfig(8e7, 8e7, reverse_ack_overhead=0.05)
    assert link.download_payload_bps_while_uploading() == pytest.approx(7.6e7)
    one = step_rate(graph, 1, link)
    assert one == pytest.approx(1 / 0.20001, rel=1e-3)
    in_turns = step_rate(graph, 2, link, sharing=SenioritySharing(2.0), measured_steps=40)
    assert in_turns == pytest.approx(2 * one * 0.95, rel=0.01)


def test_a_deep_buffer_s_reverse_load_slows_workers_in_turns_but_not_one_worker():
    """Each direction at 80% of its rate while the other carries data (its ACKs and requests wait
    behind the other direction's queue): one worker, whose directions never overlap, keeps its
    rate; two workers in turns always transfer under the other's load, so every transfer takes
    0.1 s / 0.8 and each worker's step 0.25 s: 8 steps/s instead of 10."""
    graph = chain_graph(compute_us=10.0, download_bytes=1_000_000, upload_bytes=1_000_000)
    clean = LinkConfig(8e7, 8e7)
    deep = replace(clean, download_reverse_efficiency=0.8, upload_reverse_efficiency=0.8)
    assert deep.directions_coupled() and not clean.directions_coupled()
    assert deep.reverse_efficiency(upload=False) == deep.reverse_efficiency(upload=True) == 0.8
    assert step_rate(graph, 1, deep) == pytest.approx(step_rate(graph, 1, clean), rel=1e-9)
    in_turns = step_rate(graph, 2, deep, sharing=SenioritySharing(2.0), measured_steps=40)
    assert in_turns == pytest.approx(8.0, rel=0.01)


def test_contending_connections_fill_a_deep_buffer_s_line_despite_the_reverse_load():
    """Three link-bound workers without compute keep both directions busy, most of the time with
    two connections on one of them. The reverse efficiency slows only a lone transfer, so losing
    half of it costs the three workers far less than half their rate; two workers in turns,
    always alone on their direction under the other's load, lose all of it (rate 1/(1/0.5))."""
    graph = chain_graph(compute_us=10.0, download_bytes=1_000_000, upload_bytes=1_000_000)
    clean = LinkConfig(8e7, 8e7)
    deep = replace(clean, download_reverse_efficiency=0.5, upload_reverse_efficiency=0.5)
    three = step_rate(graph, 3, clean, sharing=SenioritySharing(2.0), measured_steps=60)
    three_deep = step_rate(graph, 3, deep, sharing=SenioritySharing(2.0), measured_steps=60)
    assert 0.6 * three < three_deep < three
    two_deep = step_rate(graph, 2, deep, sharing=SenioritySharing(2.0), measured_steps=40)
    assert two_deep == pytest.approx(0.5 * step_rate(graph, 2, clean, sharing=SenioritySharing(2.0),
                                                     measured_steps=40), rel=0.02)


@pytest.mark.parametrize("efficiency", [0.0, 0.05, 1.01])
def test_impossible_reverse_efficiency_is_refused(efficiency):
    with pytest.raises(ToolError, match="upload reverse efficiency must be in"):
        LinkConfig(8e7, 8e7, upload_reverse_efficiency=efficiency)


def test_contending_connections_deliver_the_contention_efficiency_share_of_the_line():
    """Starting together under fair sharing, two workers download and upload at the same time all
    along: every transfer runs at 80% of its share and the rate falls to 80%. One worker, and two
    workers in turns, never have two connections on a direction and lose nothing."""
    graph = chain_graph(compute_us=10.0, download_bytes=1_000_000, upload_bytes=1_000_000)
    clean = LinkConfig(8e7, 8e7)
    lossy = replace(clean, contention_efficiency=0.8)
    assert step_rate(graph, 1, lossy) == pytest.approx(step_rate(graph, 1, clean), rel=1e-9)
    lock_step = step_rate(graph, 2, clean, sharing=FairSharing(), measured_steps=40)
    assert step_rate(graph, 2, lossy, sharing=FairSharing(), measured_steps=40) == pytest.approx(0.8 * lock_step,
                                                                                               rel=1e-3)
    in_turns = step_rate(graph, 2, clean, sharing=SenioritySharing(2.0), measured_steps=40)
    assert step_rate(graph, 2, lossy, sharing=SenioritySharing(2.0), measured_steps=40) == pytest.approx(in_turns,
                                                                                                        rel=0.01)


def test_connections_that_overtake_break_the_pipeline_of_three_workers_but_not_the_turns_of_two():
    """Under strict seniority three link-bound workers settle into a pipeline that keeps both
    directions busy: the link bound. When a joining connection now and then overtakes the incumbent,
    all three sometimes transfer in one direction while the other idles, as real connections do
    (the network probe: 0.85 to 0.9 of the bound with three workers), and the rate falls below the
    bound; fewer idle moments are left with four. Two workers in turns never share a direction,
    so nothing changes for them. Each seed replays the same run again."""
    graph = chain_graph(compute_us=10.0, download_bytes=1_000_000, upload_bytes=1_000_000)
    link = LinkConfig(8e7, 8e7)  # 10 steps/s when both directions are always busy

    def rates(workers: int, overtake: float) -> list[float]:
        return [step_rate(graph, workers, link, sharing=SenioritySharing(2.0, overtake=overtake),
                          measured_steps=200, stagger_s=0.2, seed=seed) for seed in range(3)]

    assert rates(3, 0.0) == pytest.approx([10.0] * 3, rel=0.01)
    assert rates(2, 0.3) == pytest.approx([10.0] * 3, rel=0.01)
    three, four = rates(3, 0.3), rates(4, 0.3)
    assert all(8.5 < r < 9.7 for r in three)
    assert sum(three) < sum(four) < 3 * 9.9
    assert rates(3, 0.3) == three


@pytest.mark.parametrize(("compute_us", "low", "high"), [(10.0, 0.79, 0.81), (50_000.0, 0.81, 0.99)])
def test_three_workers_pay_for_the_overlap_they_cannot_avoid(compute_us, low, high):
    """Three link-bound workers cannot each have a direction to themselves. Without compute, one
    direction always carries two connections, so the rate falls by the whole loss; with 50 ms of
    compute per 100 ms transfer the third worker is often computing and the loss is partial."""
    graph = chain_graph(compute_us=compute_us, download_bytes=1_000_000, upload_bytes=1_000_000)
    clean = LinkConfig(8e7, 8e7)
    lossy = replace(clean, contention_efficiency=0.8)
    full = step_rate(graph, 3, clean, sharing=SenioritySharing(2.0), measured_steps=60)
    contended = step_rate(graph, 3, lossy, sharing=SenioritySharing(2.0), measured_steps=60)
    assert full == pytest.approx(10.0, rel=0.01)  # 10 MB/s each way, 1 MB per step
    assert low * full < contended < high * full


@pytest.mark.parametrize("efficiency", [0.0, 0.05, 1.2])
def test_impossible_contention_efficiency_is_refused(efficiency):
    with pytest.raises(ToolError, match="contention efficiency"):
        LinkConfig(8e7, 8e7, contention_efficiency=efficiency)


def test_a_replay_of_n_workers_takes_the_contention_efficiency_of_the_largest_count_up_to_n():
    """Three workers' efficiency for three, four's for four and beyond, the link's own below three;
    a sweep replays each worker count with its own (three workers lose less than four here)."""
    link = LinkConfig(8e7, 8e7, contention_efficiency=0.95, contention_by_workers=((3, 0.9), (4, 0.6)))
    assert [link.for_workers(n).contention_efficiency for n in (1, 2, 3, 4, 8)] == [0.95, 0.95, 0.9, 0.6, 0.6]
    assert LinkConfig(8e7, 8e7).for_workers(4) == LinkConfig(8e7, 8e7)
    graph = chain_graph(compute_us=10.0, download_bytes=1_000_000, upload_bytes=1_000_000)
    settings = ReplaySettings(seeds=1, calibrate=False, deterministic=True)
    swept = {p.workers: p.steps_per_second for p in predict(graph, [3, 4], link, settings).points}
    for n in (3, 4):
        alone = predict(graph, [n], replace(link, contention_by_workers=(),
                                            contention_efficiency=link.for_workers(n).contention_efficiency), settings)
        assert swept[n] == pytest.approx(alone.points[0].steps_per_second, rel=1e-9)


def test_a_replay_of_n_workers_takes_the_reverse_efficiencies_of_the_largest_count_up_to_n():
    """Reverse efficiencies fitted per count are picked as the contention efficiency is, and a
    replay of three workers with them is the replay of a link that has them alone."""
    link = LinkConfig(8e7, 8e7, download_reverse_efficiency=0.6, upload_reverse_efficiency=0.7,
                      reverse_by_workers=((3, 0.9, 0.95),))
    picked = [(link.for_workers(n).download_reverse_efficiency, link.for_workers(n).upload_reverse_efficiency)
              for n in (1, 2, 3, 8)]
    assert picked == [(0.6, 0.7), (0.6, 0.7), (0.9, 0.95), (0.9, 0.95)]
    graph = chain_graph(compute_us=10_000.0, download_bytes=1_000_000, upload_bytes=1_000_000)
    settings = ReplaySettings(seeds=1, calibrate=False, deterministic=True)
    swept = predict(graph, [3], link, settings).points[0].steps_per_second
    alone = predict(graph, [3], replace(link, reverse_by_workers=(), download_reverse_efficiency=0.9,
                                        upload_reverse_efficiency=0.95), settings).points[0].steps_per_second
    slower = predict(graph, [3], replace(link, reverse_by_workers=()), settings).points[0].steps_per_second
    assert swept == pytest.approx(alone, rel=1e-9)
    assert swept > slower


@pytest.mark.parametrize("by_workers", [((1, 0.9, 0.9),), ((4, 0.9, 0.9), (3, 0.8, 0.8)), ((3, 0.9, 0.05),),
                                        ((3, 0.9),)])
def test_impossible_reverse_efficiencies_by_worker_count_are_refused(by_workers):
    with pytest.raises(ToolError, match="reverse efficiencies by worker count"):
        LinkConfig(8e7, 8e7, reverse_by_workers=by_workers)


@pytest.mark.parametrize("by_workers", [((1, 0.9),), ((4, 0.9), (3, 0.8)), ((3, 0.9), (3, 0.8)), ((3, 0.05),)])
def test_impossible_contention_by_worker_count_is_refused(by_workers):
    with pytest.raises(ToolError, match="contention efficienc"):
        LinkConfig(8e7, 8e7, contention_by_workers=by_workers)


def test_target_link_charges_delayed_acks_of_mtu_sized_segments():
    """At MTU 1500 one 66-byte ACK per two 1448-byte segments: 2.28% of the other direction's payload."""
    link = target_link(chain_graph(), 100e6)
    assert link.reverse_ack_overhead == pytest.approx(66 / 2896)
    assert link.upload_payload_bps_while_downloading() == pytest.approx(
        (100e6 - 66 / 2896 * link.download_payload_bps()) * link.payload_efficiency)


def test_by_default_long_transfers_keep_the_pipeline_of_three_workers_and_short_ones_lose_it():
    """Measured clusters: three workers whose transfers take 0.4-0.8 s per direction held the link
    95-98% busy, those at about 0.1 s lost 10-15% to moments when all of them transfer one way.
    The default overtake chance, which falls with the step's transfer time, gives both."""
    link = LinkConfig(8e7, 8e7)  # 10 MB/s each way
    model = sharing_model("seniority")

    def share_of_bound(megabytes: int) -> float:
        graph = chain_graph(compute_us=10.0, download_bytes=megabytes * 1_000_000, upload_bytes=megabytes * 1_000_000)
        bound = 10.0 / megabytes
        rates = [step_rate(graph, 3, link, sharing=model, measured_steps=150, stagger_s=0.2, seed=seed)
                 for seed in range(3)]
        return sum(rates) / len(rates) / bound

    assert share_of_bound(8) > 0.96  # 0.8 s per direction
    assert share_of_bound(1) < 0.93  # 0.1 s per direction
