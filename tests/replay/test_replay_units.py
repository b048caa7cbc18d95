"""Bandwidth and latency parsing (replay.units), and sizes in bytes (tracetool.cli_support)."""

from __future__ import annotations

import pytest

from replay.units import parse_bandwidth_bps, parse_latency_s
from tracetool.cli_support import parse_bytes
from tracetool.errors import ToolError


@pytest.mark.parametrize(
    ("text", "bps"),
    [("1gbit", 1e9), ("100mbit", 1e8), ("10Gbit/s", 1e10), ("1e9", 1e9), ("2.5gbps", 2.5e9), ("800kbit", 8e5)],
)
def test_bandwidths_are_read_in_bits_per_second(text, bps):
    """Bandwidths with bit units or bare numbers become bits per second."""
    assert parse_bandwidth_bps(text) == pytest.approx(bps)


@pytest.mark.parametrize("text", ["0", "-1gbit", "fast", "100MB", "1gb", ""])
def test_bad_bandwidths_are_refused(text):
    """Zero, negative, unreadable and byte-unit bandwidths are refused."""
    with pytest.raises(ToolError):
        parse_bandwidth_bps(text)


@pytest.mark.parametrize(
    ("text", "seconds"), [("0.2ms", 2e-4), ("200us", 2e-4), ("0", 0.0), ("1e-4", 1e-4), ("1s", 1.0)]
)
def test_latencies_are_read_in_seconds(text, seconds):
    """Latencies with time units or bare numbers (seconds) become seconds."""
    assert parse_latency_s(text) == pytest.approx(seconds)


def test_negative_latency_is_refused():
    """A negative latency is refused."""
    with pytest.raises(ToolError):
        parse_latency_s("-1ms")


@pytest.mark.parametrize(("text", "size"), [("16kib", 16384), ("64kb", 64000), ("1mib", 1048576), ("16384", 16384),
                                            ("16384b", 16384), ("0", 0), ("1.5 KiB", 1536)])
def test_sizes_are_read_in_bytes(text, size):
    """Sizes with decimal or binary byte units, or bare numbers, become bytes."""
    assert parse_bytes(text) == size


@pytest.mark.parametrize("text", ["-1kb", "16kbit", "lots", "", "16 qb"])
def test_bad_sizes_are_refused(text):
    with pytest.raises(ToolError, match="cannot read size"):
        parse_bytes(text)
