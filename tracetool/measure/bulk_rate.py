"""A link's rate from the receiving end of one bulk transfer, unharmed by CPU stalls.

A transfer's average rate (its bytes over its duration) is what the line gave *and* what the two
programs at its ends let it carry. On a busy host either end pauses now and then, and a sender's
socket buffer at a short round trip holds only milliseconds of traffic, so the line idles too:
stopping the probe's agents for 150 ms every 1.25 s cut a 100mbit link's bulk goodput to 73-84
Mbit/s (the line rate read 79 and 88). A CI machine short of CPU read 93.4 of 100 Mbit/s and
48.6 of 50 (the faster of two 2 s transfers each).

The receiver therefore reads, every few milliseconds, how many data segments its socket has
received (the kernel's count, which goes on while the program stalls and takes in segments that
arrive out of order), bracketed by the clock before and after each reading. The rate is the
highest over windows of at least ``window_s``: a window that no stall touched shows the line
itself. A window runs from the clock *before* one reading to the clock *after* a later one, so
every segment counted arrived within it and a stall only lengthens it: no window reads faster
than the line, apart from a token bucket's few kilobytes after an idle spell (under 1.5% of a
one-second window at 10mbit and above).

Counting reads instead of segments would not do: behind a deep queue a lost segment holds the
ones after it out of order, invisible to the program, until its retransmission lands, and then
they all come at once: a one-second window read 109% of a 100mbit line that way.

A segment is turned into bytes as the whole transfer averaged (its bytes over its segments), so
retransmitted segments, which use the line but carry nothing new, count as goodput lost.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def best_window_rate(readings: Sequence[Sequence[float]], transfer_segments: int, transfer_bytes: int,
                     window_s: float) -> float | None:
    """Payload bytes per second over the best window of at least ``window_s``; None when the
    readings span less than one window (or the kernel gave no segment count). Each reading is
    (clock before it, clock after it, data segments received so far)."""
    if window_s <= 0:
        raise ValueError("a rate window must last more than zero seconds")
    if len(readings) < 2 or transfer_segments <= 0:
        return None
    before = np.array([float(r[0]) for r in readings])
    after = np.array([float(r[1]) for r in readings])
    segments = np.array([float(r[2]) for r in readings])
    ends = np.searchsorted(after, before + window_s, side="left")
    usable = ends < len(after)
    if not usable.any():
        return None
    starts, ends = np.flatnonzero(usable), ends[usable]
    segments_per_s = (segments[ends] - segments[starts]) / (after[ends] - before[starts])
    return float(segments_per_s.max()) * transfer_bytes / transfer_segments
