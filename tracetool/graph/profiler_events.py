"""The events of a TF2 profiler capture, whichever file they came from.

The TF2 profiler saves an XSpace protobuf (``*.xplane.pb``); TensorBoard's trace viewer turns it
into Chrome-trace JSON (``*.trace.json.gz``). Both hold the same events: TraceMe annotations on
host threads (steps, tf.function calls), TensorFlow ops named ``name:type`` on executor threads,
and kernels and copies on GPU streams. Neither holds graph edges or transfer sizes. The readers
put both into ``ProfilerEvent``s so that step finding and graph building see one shape.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# "sequential/dense/MatMul:MatMul", "gradient_tape/x/BiasAddGrad:BiasAddGrad"; not
# "EagerLocalExecute: __inference_f_12" nor "ThreadpoolListener::Record"
_OP_EVENT = re.compile(r"^(?P<name>[^:\s]+):(?P<type>[A-Za-z_][A-Za-z0-9_]*)$")

StatValue = str | int | float


@dataclass(frozen=True)
class ProfilerEvent:
    """One timed event: a TraceMe, a TensorFlow op, a GPU kernel or a copy."""

    device: str  # the plane: "/host:CPU", "/device:GPU:0"
    lane: str  # the line: a thread name, "Stream #12(...)"
    name: str
    start_us: float
    duration_us: float
    stats: dict[str, StatValue] = field(default_factory=dict)

    @property
    def end_us(self) -> float:
        return self.start_us + self.duration_us

    def tf_op(self) -> tuple[str, str] | None:
        """(op name, op type) when the event is a TensorFlow op or a kernel launched for one."""
        for text in (self.name, str(self.stats.get("long_name", "")), str(self.stats.get("tf_op", ""))):
            match = _OP_EVENT.match(text)
            if match:
                return match.group("name"), match.group("type")
        return None


@dataclass(frozen=True)
class ProfilerCapture:
    events: tuple[ProfilerEvent, ...]
    source_kind: str  # "xplane" or "trace-viewer"
    path: str

    @property
    def devices(self) -> list[str]:
        return sorted({e.device for e in self.events})
