"""validate measures the shaped link's deep upload queue, the replay's request queue, with the
network probe's round trips under another worker's upload; a buffer within the latency is not probed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import needs_root
from tracetool.cluster.topology import parse_queue
from tracetool.measure.measurement import MeasureRequest
from tracetool.measure.validate import measured_request_queue_s


def _request(bandwidth_bps: float | None, queue: str) -> MeasureRequest:
    return MeasureRequest(model="mlp", batch_size=32, workers=(1, 2), out_dir=Path("unused"),
                          bandwidth_bps=bandwidth_bps, queue=parse_queue(queue))


def _never_called(text: str) -> None:
    raise AssertionError(f"nothing should be probed, but: {text}")


def test_no_probe_where_no_queue_stands_beyond_the_latency():
    assert measured_request_queue_s(_request(None, "100ms"), _never_called) == 0.0  # unshaped
    assert measured_request_queue_s(_request(100e6, "5ms"), _never_called) == 0.0


@pytest.mark.cluster
@needs_root
def test_a_deep_cubic_buffer_gives_requests_most_of_its_depth_to_wait():
    said: list[str] = []
    request_queue_s = measured_request_queue_s(_request(25e6, "100ms"), said.append)
    # CUBIC keeps the 100 ms buffer mostly full: the probe measured 76-92 ms standing upstream
    assert 0.04 < request_queue_s < 0.1
    assert any("standing upload queue" in line for line in said)
