"""Synthetic timelines follow the Chrome Trace Event format and TensorFlow's naming (replay.timeline)."""

from __future__ import annotations

import random
from collections import defaultdict

from replay.engine.link import LinkConfig
from replay.sweep import ReplaySettings, record_timeline
from replay.synthetic import random_graph
from replay.timeline import chrome_trace


def make_trace(workers: int = 3, sharing: str = "fair") -> dict:
    graph = random_graph(random.Random(1), layers=3, lanes=2)
    settings = ReplaySettings(sharing=sharing, calibrate=False)
    result, compiled, _ = record_timeline(graph, workers, LinkConfig(1e8, 1e8), settings, steps=2)
    return chrome_trace(result.timeline, compiled, workers)


def test_processes_are_named_like_tensorflow_devices():
    """One process per worker device (task:i) and per PS device, plus the PS network interface."""
    names = {e["args"]["name"] for e in make_trace()["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"}
    for i in range(3):
        assert f"/job:worker/replica:0/task:{i}/device:CPU:0 Compute" in names
    assert "/job:ps/replica:0/task:0/device:CPU:0 Compute" in names
    assert "PS network interface" in names


def test_slices_of_one_thread_never_overlap():
    """Viewers need the X events of one thread to nest; ours never overlap at all."""
    by_thread = defaultdict(list)
    for e in make_trace()["traceEvents"]:
        if e["ph"] == "X":
            by_thread[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    assert by_thread
    for spans in by_thread.values():
        spans.sort()
        for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
            assert start >= end - 1e-3


def test_transfers_carry_tensor_and_bytes_and_flow_to_consumers():
    """Each transfer names its tensor and bytes; every flow start has a matching finish."""
    events = make_trace()["traceEvents"]
    transfers = [e for e in events if e["ph"] == "X" and e.get("cat") == "Transfer"]
    assert transfers and all("tensor" in e["args"] and "bytes" in e["args"] for e in transfers)
    starts = {e["id"] for e in events if e["ph"] == "s"}
    finishes = {e["id"] for e in events if e["ph"] == "f"}
    assert starts and starts == finishes


def test_op_events_have_name_and_op_in_microseconds():
    """Op events carry args.name and args.op, with ts and dur in microseconds."""
    ops = [e for e in make_trace(sharing="fifo")["traceEvents"] if e["ph"] == "X" and e.get("cat") == "Op"]
    assert ops and all("name" in e["args"] and "op" in e["args"] for e in ops)
    # Ops of the random graph last up to 2000 us: microseconds, not seconds or milliseconds.
    assert max(e["dur"] for e in ops) > 10
