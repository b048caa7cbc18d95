"""Fitting the replay's link efficiencies to a link probe by replaying the probe's workload
(tracetool.measure.link_calibration)."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from replay.engine.link import target_link
from replay.sweep import ReplaySettings, predict
from replay.synthetic import chain_graph, random_graph
from tracetool.measure.link_calibration import (
    ReplayedWorkload,
    calibrate_link_to_probe,
    probe_rates,
    rates_set_contention,
)

BANDWIDTH_BPS = 8e7
STEP = dict(compute_us=10_000.0, download_bytes=1_000_000, upload_bytes=1_000_000)


def probe_made_by_the_replay(contention: float, down: float, up: float, fitted: tuple[float, float],
                             by_workers: tuple[tuple[int, float], ...] = (),
                             reverse_by_workers: tuple[tuple[int, float, float], ...] = ()) -> dict:
    """A link-probe.json whose rates are the replay's own for known efficiencies, and whose
    least-squares fit saw the reverse losses ``fitted`` (their ratio is what calibration keeps)."""
    graph = chain_graph(**STEP)
    link = replace(target_link(graph, BANDWIDTH_BPS, 0.001), contention_efficiency=contention,
                   download_reverse_efficiency=down, upload_reverse_efficiency=up, contention_by_workers=by_workers,
                   reverse_by_workers=reverse_by_workers)
    points = predict(graph, [1, 2, 3, 4], link, ReplaySettings(seeds=3, calibrate=False)).points
    return {"bandwidth_bps": BANDWIDTH_BPS, "download_bytes": STEP["download_bytes"],
            "upload_bytes": STEP["upload_bytes"], "compute_s": STEP["compute_us"] / 1e6,
            "contention_efficiency": 1.0, "download_reverse_efficiency": fitted[0],
            "upload_reverse_efficiency": fitted[1],
            "points": [{"workers": p.workers, "steps_per_second": p.steps_per_second} for p in points]}


def test_calibration_recovers_the_efficiencies_that_made_the_probe():
    """Downloads keep 70% and uploads 90% of a lone transfer's rate under reverse load (the fit saw
    losses of 15% and 5%: the same ratio, half the size), contending connections 80%: the replay of
    the probe's workload with the calibrated link meets the probe at every worker count."""
    probe = probe_made_by_the_replay(0.8, 0.7, 0.9, fitted=(0.85, 0.95))
    fit = calibrate_link_to_probe(probe, latency_s=0.001, replay_contention=True)
    assert fit.reverse_scale == pytest.approx(2.0, abs=0.05)
    assert fit.download_reverse_efficiency == pytest.approx(0.7, abs=0.01)
    assert fit.upload_reverse_efficiency == pytest.approx(0.9, abs=0.01)
    assert fit.contention_efficiency == pytest.approx(0.8, abs=0.02)
    for workers, rate in fit.probe_steps_per_second.items():
        assert fit.replayed_steps_per_second[workers] == pytest.approx(rate, rel=0.01)


def test_by_default_the_contention_efficiency_stays_the_least_squares_one():
    probe = probe_made_by_the_replay(0.8, 0.7, 0.9, fitted=(0.85, 0.95)) | {"contention_efficiency": 0.8}
    fit = calibrate_link_to_probe(probe, latency_s=0.001)
    assert fit.contention_efficiency == 0.8
    assert fit.download_reverse_efficiency == pytest.approx(0.7, abs=0.01)
    assert fit.replayed_steps_per_second[2] == pytest.approx(fit.probe_steps_per_second[2], rel=0.01)


def test_a_probe_as_fast_as_the_replay_keeps_the_link_loss_free():
    """Where the network lost nothing (a shallow buffer's probe of workers in turns), nothing is
    charged, also when the least-squares fit saw no reverse loss at all."""
    probe = probe_made_by_the_replay(1.0, 1.0, 1.0, fitted=(1.0, 1.0))
    fit = calibrate_link_to_probe(probe, latency_s=0.001, replay_contention=True)
    assert fit.download_reverse_efficiency > 0.99 and fit.upload_reverse_efficiency > 0.99
    assert fit.contention_efficiency > 0.98


def test_a_probe_without_two_workers_keeps_its_fitted_reverse_losses():
    """With no two-worker rate to size them, the least-squares losses stand as fitted: none stays none."""
    probe = probe_made_by_the_replay(0.9, 1.0, 1.0, fitted=(1.0, 1.0))
    probe["points"] = [p for p in probe["points"] if p["workers"] != 2]
    fit = calibrate_link_to_probe(probe, latency_s=0.001)
    assert (fit.download_reverse_efficiency, fit.upload_reverse_efficiency, fit.reverse_scale) == (1.0, 1.0, 1.0)
    lossy = calibrate_link_to_probe(probe | {"download_reverse_efficiency": 0.8}, latency_s=0.001)
    assert lossy.download_reverse_efficiency == pytest.approx(0.8)


def test_a_worker_count_probed_twice_is_met_at_the_mean_of_its_runs():
    """validate probes each worker count twice (two windows, possibly two regimes): the calibration
    aims at their mean, not at whichever run came last."""
    probe = probe_made_by_the_replay(0.9, 0.7, 0.9, fitted=(0.85, 0.95))
    two = next(p for p in probe["points"] if p["workers"] == 2)["steps_per_second"]
    runs = [{"workers": 2, "steps_per_second": two * 1.1}, {"workers": 2, "steps_per_second": two * 0.9}]
    twice = probe | {"points": [p for p in probe["points"] if p["workers"] != 2] + runs}
    assert probe_rates(twice)[2] == pytest.approx(two)
    assert sorted(probe_rates(twice)) == [1, 2, 3, 4]
    once, both = calibrate_link_to_probe(probe, latency_s=0.001), calibrate_link_to_probe(twice, latency_s=0.001)
    assert both.reverse_scale == pytest.approx(once.reverse_scale, rel=0.02)
    assert both.probe_steps_per_second[2] == pytest.approx(two)


@pytest.mark.parametrize(("queue_s", "from_rates"), [(0.1, True), (0.0051, True), (0.005, False), (0.001, False),
                                                     (None, False)])
def test_only_a_queue_deeper_than_the_replays_latency_lets_the_rates_set_the_contention(queue_s, from_rates):
    assert rates_set_contention(queue_s) is from_rates


def test_the_fit_says_where_its_contention_efficiency_came_from():
    probe = probe_made_by_the_replay(0.8, 0.7, 0.9, fitted=(0.85, 0.95)) | {"contention_efficiency": 0.95}
    bits = calibrate_link_to_probe(probe, latency_s=0.001)
    rates = calibrate_link_to_probe(probe, latency_s=0.001, replay_contention=rates_set_contention(0.1))
    assert (bits.contention_source, bits.contention_efficiency) == ("least squares", 0.95)
    assert rates.contention_source == "probe rates"
    assert rates.contention_efficiency == pytest.approx(0.8, abs=0.02)
    assert rates.to_json_dict()["contention_source"] == "probe rates"
    # TensorFlow's probe has rates alone: without three workers its contention is not measured
    two = probe | {"transport": "tensorflow", "points": [p for p in probe["points"] if p["workers"] <= 2]}
    assert calibrate_link_to_probe(two, latency_s=0.001, replay_contention=True).contention_source == "not probed"


def test_per_count_the_fit_meets_three_workers_that_lose_less_than_four():
    """A probe whose three workers lose 10% while contending and whose four lose 40% (TensorFlow's
    probe behind a deep buffer does such things): one efficiency meets neither, one per count both."""
    probe = probe_made_by_the_replay(0.9, 0.9, 0.9, fitted=(1.0, 1.0), by_workers=((3, 0.9), (4, 0.6)))
    single = calibrate_link_to_probe(probe, latency_s=0.001, replay_contention=True)
    assert not single.contention_by_workers
    misses = [abs(single.replayed_steps_per_second[n] / single.probe_steps_per_second[n] - 1) for n in (3, 4)]
    assert max(misses) > 0.03
    fit = calibrate_link_to_probe(probe, latency_s=0.001, replay_contention=True, per_count=True)
    assert fit.contention_by_workers[3] > fit.contention_by_workers[4] + 0.15
    for workers, rate in fit.probe_steps_per_second.items():
        assert fit.replayed_steps_per_second[workers] == pytest.approx(rate, rel=0.015)
    assert fit.to_json_dict()["contention_by_workers"].keys() == {"3", "4"}


def test_per_count_a_count_faster_than_two_workers_reverse_loss_allows_gets_its_own():
    """Two workers that lose 40% of a lone transfer's rate under reverse load (runs that keep
    bunching) and three and four that lose 5% (a pipeline): with loss-free contention the replay
    of three workers under two's reverse loss stays short of the probe, so those counts get a
    reverse loss of their own, and the replay meets every count: three workers' is the one that
    made the probe; four's is less certain, since with both directions mostly carrying several
    connections their rate hardly depends on it."""
    probe = probe_made_by_the_replay(1.0, 0.6, 0.6, fitted=(0.8, 0.8),
                                     reverse_by_workers=((3, 0.95, 0.95),))
    single = calibrate_link_to_probe(probe, latency_s=0.001, replay_contention=True)
    assert single.replayed_steps_per_second[3] < 0.97 * single.probe_steps_per_second[3]
    fit = calibrate_link_to_probe(probe, latency_s=0.001, replay_contention=True, per_count=True)
    assert fit.download_reverse_efficiency == pytest.approx(0.6, abs=0.02)
    assert sorted(fit.reverse_by_workers) == [3, 4]
    assert fit.reverse_by_workers[3][0] == pytest.approx(0.95, abs=0.04)
    assert fit.reverse_by_workers[4][0] > 0.8
    assert all(down == pytest.approx(up) for down, up in fit.reverse_by_workers.values())
    assert fit.contention_by_workers[3] == 1.0
    for workers, rate in fit.probe_steps_per_second.items():
        assert fit.replayed_steps_per_second[workers] == pytest.approx(rate, rel=0.015)
    document = fit.to_json_dict()
    assert document["reverse_by_workers"]["3"] == list(fit.reverse_by_workers[3])
    assert fit.link_reverse()[0][0] == 3


def test_a_count_fitted_by_contention_beside_a_relaxed_one_keeps_two_workers_reverse_loss():
    """Three workers pipeline (5% reverse loss), four collapse by contending (60%): three get their
    own reverse loss, four keep two workers' with a contention efficiency of their own, not the
    relaxed loss a replay of four would otherwise take from three."""
    probe = probe_made_by_the_replay(1.0, 0.6, 0.6, fitted=(0.8, 0.8), by_workers=((4, 0.6),),
                                     reverse_by_workers=((3, 0.95, 0.95), (4, 0.6, 0.6)))
    fit = calibrate_link_to_probe(probe, latency_s=0.001, replay_contention=True, per_count=True)
    assert fit.reverse_by_workers[3][0] == pytest.approx(0.95, abs=0.04)
    assert fit.reverse_by_workers[4] == (fit.download_reverse_efficiency, fit.upload_reverse_efficiency)
    assert fit.contention_by_workers[4] == pytest.approx(0.6, abs=0.05)
    for workers, rate in fit.probe_steps_per_second.items():
        assert fit.replayed_steps_per_second[workers] == pytest.approx(rate, rel=0.015)


def test_per_count_a_count_the_contention_can_meet_keeps_two_workers_reverse_loss():
    """Three and four workers that lose by contending, not less under reverse load: no count gets
    a reverse loss of its own."""
    probe = probe_made_by_the_replay(0.9, 0.7, 0.7, fitted=(0.85, 0.85), by_workers=((3, 0.85), (4, 0.7)))
    fit = calibrate_link_to_probe(probe, latency_s=0.001, replay_contention=True, per_count=True)
    assert fit.reverse_by_workers == {}
    assert fit.link_reverse() == ()


def test_a_probe_slowed_by_its_requests_waiting_is_fitted_with_the_wait_not_as_reverse_loss():
    """The probe's own requests queue behind the other workers' gradients in a deep upload
    buffer: fitted with the same wait, its workload needs no reverse loss; fitted without it, the
    slowness would pass for one, and the model's prediction would then pay the wait twice."""
    graph = chain_graph(**STEP)
    link = replace(target_link(graph, BANDWIDTH_BPS, 0.001), request_queue_s=0.08)
    points = predict(graph, [1, 2, 3, 4], link, ReplaySettings(seeds=3, calibrate=False)).points
    probe = {"bandwidth_bps": BANDWIDTH_BPS, "download_bytes": STEP["download_bytes"],
             "upload_bytes": STEP["upload_bytes"], "compute_s": STEP["compute_us"] / 1e6,
             "contention_efficiency": 1.0, "download_reverse_efficiency": 1.0, "upload_reverse_efficiency": 1.0,
             "points": [{"workers": p.workers, "steps_per_second": p.steps_per_second} for p in points]}
    with_wait = calibrate_link_to_probe(probe, latency_s=0.001, request_queue_s=0.08)
    without = calibrate_link_to_probe(probe, latency_s=0.001)
    assert with_wait.download_reverse_efficiency == pytest.approx(1.0, abs=0.01)
    assert without.download_reverse_efficiency < with_wait.download_reverse_efficiency - 0.02


def test_the_probes_lone_rate_sets_the_replayed_compute_so_its_slowness_is_no_link_loss():
    """A twin whose stages cost TensorFlow more than they sleep (40 ms a step where the profile
    leaves 10 uncovered) steps slower alone. Replayed with 10 ms, its two workers look like a
    link that loses under reverse load; replayed with the compute that meets its lone rate, the
    loss-free link that made it comes back."""
    made = dict(STEP, compute_us=40_000.0)
    graph = chain_graph(**made)
    link = target_link(graph, BANDWIDTH_BPS, 0.001)
    points = predict(graph, [1, 2], link, ReplaySettings(seeds=3, calibrate=False)).points
    probe = {"bandwidth_bps": BANDWIDTH_BPS, "download_bytes": STEP["download_bytes"],
             "upload_bytes": STEP["upload_bytes"], "compute_s": 0.010,
             "points": [{"workers": p.workers, "steps_per_second": p.steps_per_second} for p in points]}
    fit = calibrate_link_to_probe(probe, latency_s=0.001)
    assert fit.replayed_compute_s == pytest.approx(0.040, rel=0.02)
    assert fit.replayed_steps_per_second[1] == pytest.approx(fit.probe_steps_per_second[1], rel=0.005)
    assert min(fit.download_reverse_efficiency, fit.upload_reverse_efficiency) > 0.98
    contended_only = {**probe, "points": [p for p in probe["points"] if p["workers"] == 2]}
    blind = calibrate_link_to_probe(contended_only, latency_s=0.001)
    assert blind.replayed_compute_s == 0.010
    assert max(blind.download_reverse_efficiency, blind.upload_reverse_efficiency) < 0.9


def test_fitted_on_the_models_graph_the_link_meets_the_twin_at_every_count():
    """A twin's rates made by the model's own layered step (each layer's forward op waiting for its
    tensor, gradients leaving as the backward pass makes them) on a link of known efficiencies:
    replaying that graph rather than the probe's chain, the fit recovers them and meets the twin at
    every count, with the graph's own compute (no lone-run compute is fitted)."""
    graph = random_graph(random.Random(3), layers=6, max_compute_us=30_000.0, max_bytes=400_000)
    settings = ReplaySettings(seeds=3, calibrate=False)
    loss_free = target_link(graph, BANDWIDTH_BPS, 0.001)
    made = replace(loss_free, contention_efficiency=0.8, download_reverse_efficiency=0.7,
                   upload_reverse_efficiency=0.7)
    prediction = predict(graph, [1, 2, 3, 4], made, settings)
    probe = {"bandwidth_bps": BANDWIDTH_BPS, "download_bytes": prediction.download_bytes_per_step,
             "upload_bytes": prediction.upload_bytes_per_step, "compute_s": 0.05, "contention_efficiency": 1.0,
             "download_reverse_efficiency": 0.85, "upload_reverse_efficiency": 0.85, "transport": "tensorflow",
             "points": [{"workers": p.workers, "steps_per_second": p.steps_per_second} for p in prediction.points]}

    fit = calibrate_link_to_probe(probe, latency_s=0.001, replay_contention=True,
                                  workload=ReplayedWorkload(graph, loss_free, settings))
    assert fit.replayed_workload == "model" and fit.to_json_dict()["replayed_workload"] == "model"
    assert fit.replayed_compute_s == 0.05  # the probe's, untouched: the graph computes what the model does
    assert fit.download_reverse_efficiency == pytest.approx(0.7, abs=0.03)
    assert fit.contention_efficiency == pytest.approx(0.8, abs=0.05)
    for workers, rate in fit.probe_steps_per_second.items():
        assert fit.replayed_steps_per_second[workers] == pytest.approx(rate, rel=0.015)
    assert calibrate_link_to_probe(probe, latency_s=0.001, replay_contention=True).replayed_workload == "chain"
