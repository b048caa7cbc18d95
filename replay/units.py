"""Parsing of link figures the user types: bandwidths in bits per second and latencies in seconds.

Only parsing lives here; a value that cannot be read becomes a one-line ToolError.
"""

from __future__ import annotations

import math
import re

from tracetool.errors import ToolError

_BIT_PREFIXES = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
_BANDWIDTH = re.compile(r"^\s*([+-]?[0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*(?:([kmgt]?)(?:bit|b|bps)?(?:/s|ps)?)?\s*$")
_TIME_UNITS = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
_TIME = re.compile(r"^\s*([+-]?[0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*(s|ms|us|µs|ns)?\s*$")


def parse_bandwidth_bps(text: str) -> float:
    """Read ``1gbit``, ``100mbit``, ``10Gbit/s``, ``1e9`` (bits per second) into bits per second."""
    match = _BANDWIDTH.match(str(text).lower())
    if not match or (match.group(0).strip().endswith("b") and not match.group(0).strip().endswith("bit")):
        raise ToolError(f"cannot read bandwidth '{text}'; write it like 1gbit, 100mbit, 10gbit/s or 1e9 (bits/s)")
    value = float(match.group(1)) * _BIT_PREFIXES[match.group(2) or ""]
    return check_bandwidth_bps(value, text)


def check_bandwidth_bps(value: float, shown: object = None) -> float:
    """Refuse zero, negative and non-finite bandwidths."""
    if not math.isfinite(value) or value <= 0:
        raise ToolError(
            f"bandwidth must be a positive number of bits per second, got {shown if shown is not None else value}"
        )
    return float(value)


def parse_latency_s(text: str) -> float:
    """Read ``0.2ms``, ``200us``, ``0``, ``1e-4`` (seconds) into seconds."""
    match = _TIME.match(str(text).lower())
    if not match:
        raise ToolError(f"cannot read latency '{text}'; write it like 0.2ms, 200us or 0.0002 (seconds)")
    value = float(match.group(1)) * _TIME_UNITS[match.group(2) or ""]
    if not math.isfinite(value) or value < 0:
        raise ToolError(f"latency must be zero or positive, got {text}")
    return value


def format_bandwidth(bps: float) -> str:
    for unit, scale in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if bps >= scale:
            return f"{bps / scale:g} {unit}"
    return f"{bps:g} bit/s"
