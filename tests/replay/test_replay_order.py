"""Transfer-order policies decide which waiting transfer is served next (replay.engine.order)."""

from __future__ import annotations

import random

from replay.engine.compiled import compile_graph
from replay.engine.link import LinkConfig
from replay.engine.loop import DurationModel, simulate
from replay.engine.order import PriorityOrder, RandomOrder, TraceOrder, first_use_ranks
from replay.engine.sharing import FifoSharing
from replay.synthetic import GraphBuilder


def two_parameter_graph():
    """Two downloads recorded in the 'wrong' order: the one used last was sent first in the trace."""
    b = GraphBuilder()
    start = b.add("step_start", "step_start")
    late = b.add("download", "late_weights", bytes_=1_000_000, start_offset_us=1.0, after=(start,))
    early = b.add("download", "early_weights", bytes_=1_000_000, start_offset_us=2.0, after=(start,))
    first = b.add("compute", "first_layer", 10_000.0, start_offset_us=3.0, after=(early,))
    second = b.add("compute", "second_layer", 10_000.0, start_offset_us=4.0, after=(first, late))
    b.add("step_end", "step_end", after=(second,))
    return b.build()


def download_order(order) -> list[str]:
    compiled = compile_graph(two_parameter_graph())
    result = simulate(
        compiled,
        1,
        LinkConfig(1e8, 1e8),
        sharing=FifoSharing(),
        order=order,
        durations=DurationModel(deterministic=True),
        measured_steps=1,
        warmup_steps=0,
        record_steps=1,
    )
    transfers = sorted(result.timeline.transfers, key=lambda r: r[3])
    return [compiled.names[r[1]] for r in transfers]


def test_trace_order_follows_the_recorded_start_offsets():
    """Under fifo, the trace order sends downloads as the profile recorded them."""
    assert download_order(TraceOrder()) == ["late_weights", "early_weights"]


def test_priority_order_sends_the_first_needed_parameter_first():
    """Under fifo, the priority order sends the parameter whose consumer runs first."""
    assert download_order(PriorityOrder()) == ["early_weights", "late_weights"]


def test_priority_order_shortens_the_step_when_order_matters():
    """Sending first-needed parameters first overlaps the link with compute: a shorter step."""

    def step_s(order) -> float:
        compiled = compile_graph(two_parameter_graph())
        link = LinkConfig(1e8, 1e8)
        durations = DurationModel(deterministic=True)
        run = simulate(compiled, 1, link, sharing=FifoSharing(), order=order, durations=durations, measured_steps=2)
        return 1.0 / run.steps_per_second

    # Trace order: both downloads (0.16 s) then both layers; priority: the first layer runs during the second download.
    assert step_s(TraceOrder()) > step_s(PriorityOrder()) + 0.009


def test_random_order_is_seeded():
    """The random order gives the same sequence for the same seed."""
    compiled = compile_graph(two_parameter_graph())
    key_a = RandomOrder().ranker(compiled, random.Random(4))
    key_b = RandomOrder().ranker(compiled, random.Random(4))
    assert [key_a(0.0, 1) for _ in range(5)] == [key_b(0.0, 1) for _ in range(5)]


def test_first_use_ranks_follow_consumers():
    """A download ranks by the contention-free start of its first consumer."""
    compiled = compile_graph(two_parameter_graph())
    ranks = first_use_ranks(compiled)
    late, early = 1, 2
    assert ranks[early] < ranks[late]
