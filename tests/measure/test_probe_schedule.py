"""The probe's schedule: which stage of the model's compute waits for each tensor, how long each
stage computes, and after which its gradient leaves, read from a step graph."""

from __future__ import annotations

import pytest

from replay.synthetic import GraphBuilder
from tracetool.errors import ToolError
from tracetool.graph.stepgraph import COMPUTE, DOWNLOAD, STEP_END, STEP_START, UPLOAD, StepGraph
from tracetool.measure.probe_schedule import MAX_STAGES, probe_schedule


def _two_layer_step() -> StepGraph:
    """Input 0.4 ms; layer 1 reads w1 at 2 ms (1 ms); layer 2 waits for w2 until 5 ms (1 ms);
    backward: layer 2 for 2 ms, its gradient leaves at 8 ms; layer 1 scheduled 0.2 ms later, for
    1.5 ms, leaving at 9.7 ms."""
    b = GraphBuilder()
    start = b.add(STEP_START, "step_start")
    w1 = b.add(DOWNLOAD, "w1", bytes_=1000, start_offset_us=100.0, after=(start,))
    w2 = b.add(DOWNLOAD, "w2", bytes_=4000, start_offset_us=100.0, after=(start,))
    feed = b.add(COMPUTE, "input", 400.0, start_offset_us=0.0, after=(start,))
    f1 = b.add(COMPUTE, "f1", 1000.0, start_offset_us=2000.0, after=(w1, feed))
    f2 = b.add(COMPUTE, "f2", 1000.0, start_offset_us=5000.0, after=(w2, f1))
    b2 = b.add(COMPUTE, "b2", 2000.0, start_offset_us=6000.0, after=(f2,))
    g2 = b.add(UPLOAD, "g2", bytes_=4000, start_offset_us=8000.0, after=(b2,))
    b1 = b.add(COMPUTE, "b1", 1500.0, start_offset_us=8200.0, gap_us=200.0, after=(b2,))
    g1 = b.add(UPLOAD, "g1", bytes_=1000, start_offset_us=9700.0, after=(b1,))
    b.add(STEP_END, "step_end", after=(g1, g2))
    return b.build()


def test_stages_wait_for_their_tensors_and_compute_only_the_busy_time():
    schedule = probe_schedule(_two_layer_step())
    assert schedule.tensor_bytes == (1000, 4000)
    # stages start where f1 reads w1 (2 ms), f2 reads w2 (5 ms), g2 leaves (8 ms), g1 leaves (9.7 ms)
    assert schedule.gate_stage == (0, 1)
    # f1's 1 ms, not the 3 ms until w2 arrived; then f2 and b2; then b1 with its scheduling gap
    assert schedule.stage_compute_s == pytest.approx((0.001, 0.003, 0.0017, 0.0))
    assert schedule.release_after == (3, 2)
    assert schedule.before_s == pytest.approx(0.0004)
    assert schedule.compute_s == pytest.approx(0.0061)



def test_the_stages_compute_what_the_replay_calibrated_not_what_the_trace_stretched():
    """Scaled by the replay's calibration (tracing stretched the ops by 1.6: scale 0.625), every
    stage and the compute before the first read shrink alike; the stages themselves stay."""
    traced, scaled = probe_schedule(_two_layer_step()), probe_schedule(_two_layer_step(), compute_scale=0.625)
    assert scaled.stage_compute_s == pytest.approx(tuple(0.625 * s for s in traced.stage_compute_s))
    assert scaled.before_s == pytest.approx(0.625 * traced.before_s)
    assert (scaled.gate_stage, scaled.release_after) == (traced.gate_stage, traced.release_after)
    with pytest.raises(ValueError, match="at least 0, got -1"):
        probe_schedule(_two_layer_step(), compute_scale=-1.0)

def test_equal_sizes_take_the_gradients_in_the_order_they_left():
    """Any tensor of a size is the same to the link; one with no upload of its size leaves last."""
    b = GraphBuilder()
    start = b.add(STEP_START, "step_start")
    downs = [b.add(DOWNLOAD, f"w{i}", bytes_=size, after=(start,)) for i, size in enumerate((500, 500, 8))]
    forward = b.add(COMPUTE, "forward", 1000.0, start_offset_us=1000.0, after=tuple(downs))
    early = b.add(UPLOAD, "g_late_layer", bytes_=500, start_offset_us=3000.0, after=(forward,))
    late = b.add(UPLOAD, "g_early_layer", bytes_=500, start_offset_us=6000.0, after=(forward,))
    b.add(STEP_END, "step_end", after=(early, late))
    schedule = probe_schedule(b.build())
    assert schedule.gate_stage == (0, 0, 0)
    assert schedule.release_after == (1, 2, 2)


def test_close_moments_share_a_stage_and_long_steps_have_few_stages():
    b = GraphBuilder()
    start = b.add(STEP_START, "step_start")
    previous = start
    downs, ups = [], []
    for i in range(300):  # a deep model: a tensor read every 0.2 ms, a gradient every 0.2 ms
        down = b.add(DOWNLOAD, f"w{i}", bytes_=100 + i, after=(start,))
        previous = b.add(COMPUTE, f"f{i}", 200.0, start_offset_us=1000.0 + 200 * i, after=(previous, down))
        downs.append(down)
    for i in reversed(range(300)):
        previous = b.add(COMPUTE, f"b{i}", 200.0, start_offset_us=61_000.0 + 200 * (299 - i), after=(previous,))
        ups.append(b.add(UPLOAD, f"g{i}", bytes_=100 + i, start_offset_us=61_200.0 + 200 * (299 - i),
                         after=(previous,)))
    b.add(STEP_END, "step_end", after=tuple(ups))
    schedule = probe_schedule(b.build())
    assert len(schedule.stage_compute_s) <= MAX_STAGES + 1
    # the compute is all there, however the stages group it
    assert schedule.compute_s == pytest.approx(0.12, rel=0.01)
    # no gradient leaves before the stage that read its tensor started (a stage is at most
    # MAX_STAGES-th of the step: the last layer's read and its gradient fall into one)
    for gate, after in zip(schedule.gate_stage, schedule.release_after, strict=True):
        assert after >= gate
    assert list(schedule.gate_stage) == sorted(schedule.gate_stage)
    assert list(schedule.release_after) == sorted(schedule.release_after, reverse=True)


def test_a_step_without_uploads_is_refused():
    b = GraphBuilder()
    start = b.add(STEP_START, "step_start")
    down = b.add(DOWNLOAD, "w", bytes_=100, after=(start,))
    b.add(STEP_END, "step_end", after=(b.add(COMPUTE, "f", 100.0, after=(down,)),))
    with pytest.raises(ToolError, match="no uploads"):
        probe_schedule(b.build())
