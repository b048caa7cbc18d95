"""The bulk rate's best window, on segment counts made up to show each case."""

from __future__ import annotations

import pytest

from tracetool.measure.bulk_rate import best_window_rate

SEGMENT = 1448


def steady(segments_per_s: float, seconds: float, every_s: float = 0.002, start_s: float = 0.0,
           counted: int = 0) -> list[list[float]]:
    """Readings of a line delivering ``segments_per_s``, each taking 10 µs."""
    readings = []
    for k in range(1, int(round(seconds / every_s)) + 1):
        t = start_s + k * every_s
        readings.append([t - 1e-5, t, counted + int(segments_per_s * k * every_s)])
    return readings


def test_a_steady_line_reads_its_rate():
    readings = steady(8000, 2.0)
    rate = best_window_rate(readings, readings[-1][2], readings[-1][2] * SEGMENT, 1.0)
    assert rate == pytest.approx(8000 * SEGMENT, rel=1e-3)


def test_a_stall_is_skipped_by_a_window_that_misses_it():
    """The line idles 0.3 s (a sender that stalled), then runs on: the average reads 13% low,
    the best window the line."""
    before = steady(8000, 1.0)
    readings = before + steady(8000, 1.2, start_s=1.3, counted=int(before[-1][2]))
    total = readings[-1][2]
    assert total / (readings[-1][1] - readings[0][0]) < 0.9 * 8000
    assert best_window_rate(readings, total, total * SEGMENT, 1.0) == pytest.approx(8000 * SEGMENT, rel=2e-3)


@pytest.mark.parametrize("count_read_at", [1.0, 1.2])
def test_a_stall_within_a_reading_only_lengthens_its_windows(count_read_at: float):
    """The program stalls from 1.0 to 1.2 s within one reading, before or after the kernel's count:
    windows from the clock before a reading to the clock after a later one hold every segment
    they count, so none reads faster than the line (a window begun at 1.2 s from a count made at
    1.0 would read 20% fast)."""
    readings = [r for r in steady(8000, 2.5) if not 1.0 < r[1] <= 1.2]
    stalled = next(i for i, r in enumerate(readings) if r[1] > 1.2) - 1
    readings[stalled] = [readings[stalled][0], 1.2, int(8000 * count_read_at)]
    total = readings[-1][2]
    assert best_window_rate(readings, total, total * SEGMENT, 1.0) <= 8000 * SEGMENT * 1.002


def test_retransmitted_segments_count_as_goodput_lost():
    """Of 10 000 segments received, 100 were retransmissions: the bytes carried per segment are 1% fewer."""
    readings = steady(8000, 1.25)
    assert readings[-1][2] == 10_000
    rate = best_window_rate(readings, 10_000, 9_900 * SEGMENT, 1.0)
    assert rate == pytest.approx(0.99 * 8000 * SEGMENT, rel=1e-3)


def test_readings_shorter_than_a_window_or_without_a_count_give_no_rate():
    assert best_window_rate(steady(8000, 0.5), 4000, 4000 * SEGMENT, 1.0) is None
    assert best_window_rate([], 0, 4000 * SEGMENT, 1.0) is None


def test_a_window_of_no_length_is_refused():
    with pytest.raises(ValueError, match="more than zero seconds"):
        best_window_rate(steady(8000, 2.0), 16_000, 16_000 * SEGMENT, 0.0)
