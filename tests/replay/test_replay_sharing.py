"""Link-sharing models on hand-made transfers with known finish times (replay.engine.sharing)."""

from __future__ import annotations

import math
import random

import pytest

from replay.engine.sharing import (
    DEFAULT_OVERTAKE,
    DEFAULT_OVERTAKE_TIME_S,
    FairSharing,
    FifoSharing,
    SenioritySharing,
    TransferFairSharing,
    sharing_model,
)


def drain(link, arrivals):
    """Feed (time, worker, node, bits) arrivals to a link and return {(worker, node): finish time}."""
    pending = sorted(arrivals)
    finished = {}
    now = 0.0
    while pending or link.next_time() < math.inf:
        next_arrival = pending[0][0] if pending else math.inf
        next_finish = link.next_time()
        if next_arrival <= next_finish:
            now, worker, node, bits = pending.pop(0)
            link.add(now, (now, node), worker, node, bits)
        else:
            now = next_finish
            for done in link.pop_finished(now):
                finished[done] = now
    return finished


def test_fair_splits_capacity_between_connections_then_gives_it_back():
    """Two workers' equal transfers share the link; each takes twice as long as alone."""
    link = FairSharing().new_link(100.0, 100.0, 2)
    finished = drain(link, [(0.0, 0, 0, 100.0), (0.0, 1, 0, 100.0)])
    assert finished[(0, 0)] == pytest.approx(2.0)
    assert finished[(1, 0)] == pytest.approx(2.0)


def test_fair_is_per_connection_not_per_transfer():
    """A worker with two transfers gets half the link, like a worker with one."""
    link = FairSharing().new_link(100.0, 100.0, 2)
    finished = drain(link, [(0.0, 0, 0, 50.0), (0.0, 0, 1, 50.0), (0.0, 1, 0, 100.0)])
    # Worker 0's connection carries 100 bits at 50 bits/s; worker 1's too.
    assert finished[(0, 0)] == pytest.approx(2.0)
    assert finished[(0, 1)] == pytest.approx(2.0)
    assert finished[(1, 0)] == pytest.approx(2.0)


def test_fair_per_transfer_gives_each_transfer_an_equal_share():
    """With per-transfer fairness three transfers get a third each until one leaves."""
    link = TransferFairSharing().new_link(90.0, 90.0, 2)
    finished = drain(link, [(0.0, 0, 0, 30.0), (0.0, 0, 1, 90.0), (0.0, 1, 0, 90.0)])
    assert finished[(0, 0)] == pytest.approx(1.0)
    assert finished[(0, 1)] == pytest.approx(1.0 + 60.0 / 45.0)
    assert finished[(1, 0)] == pytest.approx(1.0 + 60.0 / 45.0)


def test_fair_late_arrival_slows_the_transfer_in_service():
    """A transfer alone for 1 s, then shared, finishes when its remaining bits are served at half rate."""
    link = FairSharing().new_link(100.0, 100.0, 2)
    finished = drain(link, [(0.0, 0, 0, 200.0), (1.0, 1, 0, 200.0)])
    assert finished[(0, 0)] == pytest.approx(3.0)
    assert finished[(1, 0)] == pytest.approx(4.0)


def test_worker_interface_caps_a_lone_connection():
    """A connection never exceeds its worker's own interface; the PS gives the rest to others."""
    link = FairSharing().new_link(100.0, 25.0, 2)
    finished = drain(link, [(0.0, 0, 0, 50.0)])
    assert finished[(0, 0)] == pytest.approx(2.0)


def test_per_transfer_max_min_respects_worker_interfaces():
    """With a slow worker interface, the other worker takes the capacity left over (max-min)."""
    link = TransferFairSharing().new_link(100.0, 60.0, 2)
    # Worker 0 has two transfers (its interface allows 30 each), worker 1 one transfer: 100 - 60 = 40 left.
    finished = drain(link, [(0.0, 0, 0, 30.0), (0.0, 0, 1, 30.0), (0.0, 1, 0, 40.0)])
    assert finished[(0, 0)] == pytest.approx(1.0)
    assert finished[(1, 0)] == pytest.approx(1.0)


def test_fifo_serves_one_transfer_at_a_time_in_key_order():
    """Fifo serves transfers that arrive together smallest key first, one after another at full rate."""
    link = FifoSharing().new_link(100.0, 100.0, 1)
    link.add(0.0, (0, 5), 0, 0, 100.0)
    link.add(0.0, (0, 9), 0, 1, 100.0)
    link.add(0.0, (0, 1), 0, 2, 100.0)
    finished = drain(link, [])
    assert finished == {(0, 2): 1.0, (0, 0): 2.0, (0, 1): 3.0}


def test_capped_streams_admit_waiting_transfers_in_key_order():
    """With max_streams, waiting transfers enter as others leave, smallest key first."""
    link = FairSharing(max_streams=1).new_link(100.0, 100.0, 3)
    link.add(0.0, (0.0, 3), 0, 0, 100.0)
    link.add(0.0, (0.0, 2), 1, 0, 100.0)
    link.add(0.0, (0.0, 1), 2, 0, 100.0)
    finished = drain(link, [])
    assert finished == {(2, 0): pytest.approx(1.0), (1, 0): pytest.approx(2.0), (0, 0): pytest.approx(3.0)}


def test_served_bits_count_what_the_link_carried():
    """served_bits grows by the bits carried, at full capacity while anything is in service."""
    link = FairSharing().new_link(100.0, 100.0, 2)
    drain(link, [(0.0, 0, 0, 150.0), (0.5, 1, 0, 50.0)])
    assert link.served_bits(10.0) == pytest.approx(200.0)


def test_seniority_gives_the_older_upload_its_weight_and_the_younger_the_rest():
    """Weight 3 against 1: the older connection gets 75 of 100 bits/s until it finishes."""
    link = SenioritySharing(3.0).new_upload_link(100.0, 100.0, 2)
    finished = drain(link, [(0.0, 0, 0, 100.0), (0.5, 1, 0, 100.0)])
    # worker 0 has 50 bits left at 0.5 s and gets 75 bits/s; worker 1 then has 100 - 25 * 2/3 left at 100
    assert finished[(0, 0)] == pytest.approx(0.5 + 50.0 / 75.0)
    assert finished[(1, 0)] == pytest.approx(2.0)


def test_seniority_is_by_when_a_connection_became_active_not_by_worker_number():
    """Worker 1 starts first, so it is the senior one; worker 0 gets the smaller share."""
    link = SenioritySharing(4.0).new_upload_link(100.0, 100.0, 2)
    finished = drain(link, [(0.0, 1, 0, 80.0), (0.25, 0, 0, 80.0)])
    # worker 1: 25 bits alone, then 55 at 80 bits/s; worker 0: 20 bits/s meanwhile, then the full link
    assert finished[(1, 0)] == pytest.approx(0.25 + 55.0 / 80.0)
    assert finished[(0, 0)] == pytest.approx(0.25 + 55.0 / 80.0 + (80.0 - 20.0 * 55.0 / 80.0) / 100.0)


def test_seniority_of_one_is_fair_in_both_directions():
    """Seniority 1 shares equally; so do downloads of the earlier model with fair downloads."""
    for link in (SenioritySharing(1.0).new_upload_link(100.0, 100.0, 2),
                 SenioritySharing(1.0).new_download_link(100.0, 100.0, 2),
                 SenioritySharing(5.0, fair_downloads=True).new_download_link(100.0, 100.0, 2)):
        finished = drain(link, [(0.0, 0, 0, 100.0), (0.0, 1, 0, 100.0)])
        assert finished[(0, 0)] == pytest.approx(2.0) and finished[(1, 0)] == pytest.approx(2.0)


def test_downloads_are_weighted_by_age_like_uploads():
    """Both directions end in a drop-tail queue shared by CUBIC connections: the older download
    keeps weight 3 of 4, as an upload does."""
    up = drain(SenioritySharing(3.0).new_upload_link(100.0, 100.0, 2), [(0.0, 0, 0, 100.0), (0.5, 1, 0, 100.0)])
    down = drain(SenioritySharing(3.0).new_download_link(100.0, 100.0, 2), [(0.0, 0, 0, 100.0), (0.5, 1, 0, 100.0)])
    assert down == pytest.approx(up)
    assert down[(0, 0)] == pytest.approx(0.5 + 50.0 / 75.0)


def test_seniority_caps_a_connection_at_its_worker_interface():
    """A senior connection capped at 60 bits/s leaves the other 40, more than its weight alone would give."""
    link = SenioritySharing(10.0).new_upload_link(100.0, 60.0, 2)
    finished = drain(link, [(0.0, 0, 0, 60.0), (0.0, 1, 0, 40.0)])
    assert finished[(0, 0)] == pytest.approx(1.0) and finished[(1, 0)] == pytest.approx(1.0)


def test_an_upload_that_overtakes_takes_the_senior_share():
    """Overtake chance 1: the younger connection wins the race for the queue and gets weight 3 of 4,
    so it finishes first, as if it had been the senior one."""
    link = SenioritySharing(3.0, overtake=1.0).new_upload_link(100.0, 100.0, 2, rng=random.Random(0))
    finished = drain(link, [(0.0, 0, 0, 100.0), (0.5, 1, 0, 100.0)])
    # from 0.5 s worker 1 gets 75 bits/s for its 100 bits; worker 0 gets 25 for its last 50
    assert finished[(1, 0)] == pytest.approx(0.5 + 100.0 / 75.0)
    assert finished[(0, 0)] == pytest.approx(0.5 + 100.0 / 75.0 + (50.0 - 25.0 * 100.0 / 75.0) / 100.0)


@pytest.mark.parametrize("direction", ["new_upload_link", "new_download_link"])
def test_overtaking_happens_at_its_chance_in_either_direction(direction: str):
    """Over many joins the younger connection wins about as often as the chance says."""
    rng = random.Random(7)
    model = SenioritySharing(3.0, overtake=0.3)
    wins = 0
    for _ in range(2000):
        link = getattr(model, direction)(100.0, 100.0, 2, rng=rng)
        finished = drain(link, [(0.0, 0, 0, 100.0), (0.5, 1, 0, 100.0)])
        wins += finished[(1, 0)] < finished[(0, 0)]
    assert 0.26 < wins / 2000 < 0.34


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan")])
def test_overtake_outside_zero_to_one_is_refused(bad: float):
    with pytest.raises(ValueError, match="--overtake"):
        SenioritySharing(2.0, overtake=bad)


def test_overtaking_without_a_random_generator_is_refused():
    with pytest.raises(ValueError, match="random generator"):
        SenioritySharing(2.0, overtake=0.3).new_upload_link(100.0, 100.0, 2)
    with pytest.raises(ValueError, match="random generator"):
        SenioritySharing(2.0, overtake=0.3).new_download_link(100.0, 100.0, 2)


def test_default_seniority_model_overtakes_and_other_models_refuse_the_option():
    assert sharing_model("seniority").overtake == DEFAULT_OVERTAKE > 0.0
    assert sharing_model("seniority", overtake=0.0).overtake == 0.0
    with pytest.raises(ValueError, match="--overtake applies to --sharing seniority only"):
        sharing_model("fair", overtake=0.2)


@pytest.mark.parametrize("bad", [0.5, float("nan"), float("inf")])
def test_seniority_below_one_or_not_finite_is_refused(bad: float):
    with pytest.raises(ValueError, match="--seniority"):
        SenioritySharing(bad)


def test_seniority_value_with_another_sharing_model_is_refused():
    with pytest.raises(ValueError, match="--seniority applies to --sharing seniority only"):
        sharing_model("fair", seniority=2.0)


@pytest.mark.parametrize("model", [FairSharing(), TransferFairSharing(), FifoSharing(), SenioritySharing(2.0)],
                         ids=["fair", "fair-per-transfer", "fifo", "seniority"])
def test_capacity_change_applies_from_that_moment(model):
    """100 bits at 100 bits/s; at 0.5 s the capacity halves, so the other 50 bits take 1 s more."""
    link = model.new_link(100.0, 1000.0, 1)
    link.add(0.0, (0.0, 0), 0, 0, 100.0)
    assert link.pop_finished(0.0) == []  # fifo starts its transfer here
    link.set_capacity(0.5, 50.0)
    assert link.next_time() == pytest.approx(1.5)
    assert link.pop_finished(1.5) == [(0, 0)]
    assert link.served_bits(1.5) == pytest.approx(100.0)


@pytest.mark.parametrize(
    ("model", "expected"),
    [(FairSharing(), [1, 1, 2, 1, 0]), (TransferFairSharing(), [1, 1, 2, 1, 0]),
     (SenioritySharing(2.0), [1, 1, 2, 1, 0]), (FifoSharing(), [0, 1, 1, 1, 0])],
)
def test_connections_count_workers_with_data_in_flight(model, expected):
    """Worker 0 sends two transfers, then worker 1 one; the count follows arrivals and finishes
    (a FIFO link has one transfer in service at a time, started at the end of the instant)."""
    for direction in ("new_download_link", "new_upload_link"):
        link = getattr(model, direction)(1e6, 1e6, 2)
        counts = []
        link.add(0.0, (0.0, 0), 0, 0, 1e6)
        counts.append(link.connections())
        link.add(0.0, (0.0, 1), 0, 1, 1e6)
        link.pop_finished(0.0)
        counts.append(link.connections())
        link.add(0.5, (0.5, 2), 1, 2, 1e5)
        counts.append(link.connections())
        while link.next_time() < math.inf and link.connections() > 1:
            link.pop_finished(link.next_time())
        counts.append(link.connections())
        while link.next_time() < math.inf:
            link.pop_finished(link.next_time())
        counts.append(link.connections())
        assert counts == expected, direction


def test_overtake_chance_falls_with_the_time_a_step_transfers_alone():
    """The chance is the overtake time over the step's transfer time, capped by ``overtake``: long
    transfers (0.8 s) are hardly ever overtaken, short ones (50 ms) at the cap."""
    model = SenioritySharing(2.0, overtake=0.4, overtake_time_s=0.04)
    assert model.overtake_chance(0.8) == pytest.approx(0.05)
    assert model.overtake_chance(0.2) == pytest.approx(0.2)
    assert model.overtake_chance(0.05) == pytest.approx(0.4)
    assert model.overtake_chance(None) == pytest.approx(0.4)
    assert SenioritySharing(2.0, overtake=0.3).overtake_chance(0.8) == pytest.approx(0.3)  # constant by default


def test_a_link_for_long_transfers_is_overtaken_less_often():
    """Measured end to end on the link: with the step's transfer at 0.8 s alone, a joining
    connection wins about 5% of the time instead of the cap's 40%."""
    rng = random.Random(11)
    model = SenioritySharing(3.0, overtake=0.4, overtake_time_s=0.04)
    wins = {0.05: 0, 0.8: 0}
    for transfer_s in wins:
        for _ in range(2000):
            link = model.new_upload_link(100.0, 100.0, 2, rng=rng, transfer_s=transfer_s)
            finished = drain(link, [(0.0, 0, 0, 100.0), (0.5, 1, 0, 100.0)])
            wins[transfer_s] += finished[(1, 0)] < finished[(0, 0)]
    assert 0.36 < wins[0.05] / 2000 < 0.44
    assert 0.03 < wins[0.8] / 2000 < 0.07


@pytest.mark.parametrize("bad", [0.0, -0.04, float("nan")])
def test_overtake_time_that_is_not_positive_is_refused(bad: float):
    with pytest.raises(ValueError, match="--overtake-time must be a positive number"):
        SenioritySharing(2.0, overtake=0.3, overtake_time_s=bad)


def test_default_overtake_time_applies_to_seniority_only():
    assert sharing_model("seniority").overtake_time_s == DEFAULT_OVERTAKE_TIME_S
    assert sharing_model("seniority", overtake_time_s=math.inf).overtake_chance(5.0) == DEFAULT_OVERTAKE
    with pytest.raises(ValueError, match="--overtake-time applies to --sharing seniority only"):
        sharing_model("fifo", overtake_time_s=0.1)
