"""Reading typed fields of a JSON document, with one-line refusals that say where and how to fix.

The step-graph reader checks every field it takes (type, finite, range) against the rules of
docs/stepgraph-schema.md; these helpers do the checking so that the reader reads as the
schema does. Every refusal names the file, the record and the field.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from tracetool.errors import ToolError

# Limits past which a figure is a damaged file, not a measurement. Bytes stay exact in the
# float64 arithmetic of the replay up to 2**53; no profiled step lasts a day.
MAX_BYTES = 2**53
MAX_COUNT = 2**53
MAX_DURATION_US = 86_400e6
MAX_DURATION_S = 86_400.0
# A calibrated bandwidth of 0 means "not calibrated"; otherwise no profiling link is slower than
# a kilobit per second (a replay would take ages) nor faster than a petabit per second.
MIN_BANDWIDTH_BPS = 1e3
MAX_BANDWIDTH_BPS = 1e15
# A mean is the mean of its samples, up to the rounding of whoever summed them (float32 writers
# round to about 7 digits); anything further off means the samples or the mean were edited.
MEAN_RELATIVE_TOLERANCE = 1e-6
MEAN_ABSOLUTE_TOLERANCE = 1e-12


def shown(value: Any, limit: int = 60) -> str:
    """A value as JSON on one line (escapes keep names with newlines on one line), cut short."""
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError):  # not JSON, or an integer of more digits than Python converts
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def out_of_range(value: float, maximum: float, unit: str = "") -> str:
    """Why a figure outside 0..maximum is refused, with the limit in words where it has a reason."""
    text = f"{value:g}" if isinstance(value, float) else shown(value)
    if value < 0:
        return f"is {text}, negative"
    if maximum == 2**53:
        return f"is {text}, above 2**53"
    reason = " (a day)" if maximum in (MAX_DURATION_US, MAX_DURATION_S) else ""
    return f"is {text}, above {maximum:g}{unit}{reason}"


@dataclass(frozen=True)
class Place:
    """Where a value sits in a step-graph document (file, record), so every refusal says where and how to fix it."""

    origin: str
    record: str  # "node 12 (\"fc1/MatMul\")", "model", "edge 3"
    fix: str

    def refuse(self, key: str, problem: str) -> ToolError:
        return ToolError(f"{self.origin}: {self.record} field '{key}' {problem}; {self.fix}")


MISSING = object()


def field_value(obj: dict[str, Any], key: str, place: Place, default: Any) -> Any:
    """The value at ``key``; ``default`` when absent, or a refusal when ``default`` is ``MISSING``."""
    if key in obj:
        return obj[key]
    if default is MISSING:
        raise place.refuse(key, "is missing")
    return default


def string_field(obj: dict[str, Any], key: str, place: Place, default: Any = MISSING) -> str:
    value = field_value(obj, key, place, default)
    if not isinstance(value, str):
        raise place.refuse(key, f"is {shown(value)}, not a string")
    return value


def whole_field(
    obj: dict[str, Any], key: str, place: Place, default: Any = MISSING, *, maximum: int = MAX_COUNT
) -> int:
    """A whole number in 0..maximum; ``4096.0`` is accepted (some JSON writers only know floats)."""
    value = field_value(obj, key, place, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise place.refuse(key, f"is {shown(value)}, not a whole number")
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise place.refuse(key, f"is {shown(value)}, not a whole number")
    if not 0 <= value <= maximum:
        raise place.refuse(key, out_of_range(value, maximum))
    return int(value)


def number_field(
    obj: dict[str, Any], key: str, place: Place, default: Any = MISSING, *, maximum: float, unit: str = ""
) -> float:
    """A finite number in [0, maximum]: times, rates and counts of a measured step are never negative."""
    return checked_number(field_value(obj, key, place, default), key, place, maximum, unit)


def checked_number(value: Any, key: str, place: Place, maximum: float, unit: str = "") -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise place.refuse(key, f"is {shown(value)}, not a number")
    # Only floats can be NaN or infinite; an integer of 400 digits is finite, and too big for a float.
    if isinstance(value, float) and not math.isfinite(value):
        raise place.refuse(key, f"is {shown(value)}, not a finite number")
    if not 0 <= value <= maximum:
        raise place.refuse(key, out_of_range(value, maximum, unit))
    return float(value)


def object_field(obj: dict[str, Any], key: str, place: Place, default: Any = MISSING) -> dict[str, Any]:
    value = field_value(obj, key, place, default)
    if not isinstance(value, dict):
        raise place.refuse(key, f"is {shown(value)}, not an object")
    return value


def list_field(obj: dict[str, Any], key: str, place: Place, default: Any = MISSING) -> list[Any]:
    value = field_value(obj, key, place, default)
    if not isinstance(value, list):
        raise place.refuse(key, f"is {shown(value)}, not a list")
    return value


def choice_field(obj: dict[str, Any], key: str, place: Place, choices: tuple[str, ...], default: Any = MISSING) -> str:
    value = field_value(obj, key, place, default)
    if value not in choices:
        raise place.refuse(key, f"is {shown(value)}, not one of {', '.join(choices)}")
    return value


def mean_and_samples(
    stats: dict[str, Any], mean_key: str, samples_key: str, place: Place, maximum: float, unit: str
) -> tuple[float, tuple[float, ...]]:
    """A mean and its samples, checked for agreement: replay draws from the samples and reports the mean."""
    mean = number_field(stats, mean_key, place, maximum=maximum, unit=unit)
    raw = list_field(stats, samples_key, place, default=[])
    samples = tuple(checked_number(v, f"{samples_key}[{i}]", place, maximum, unit) for i, v in enumerate(raw))
    if samples:
        expected = math.fsum(samples) / len(samples)
        tolerance = MEAN_RELATIVE_TOLERANCE * max(samples) + MEAN_ABSOLUTE_TOLERANCE
        if abs(mean - expected) > tolerance:
            raise place.refuse(mean_key, f"is {mean:g}, but its {len(samples)} samples average {expected:g}")
    return mean, samples


@dataclass(frozen=True)
class SubPlace(Place):
    """A place inside a nested object of a record: field names read ``duration.mean_us``."""

    prefix: str = ""

    def refuse(self, key: str, problem: str) -> ToolError:
        return super().refuse(f"{self.prefix}.{key}", problem)
