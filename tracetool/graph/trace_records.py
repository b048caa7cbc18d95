"""One uniform record type for every trace format the graph builder reads.

RunMetadata protobufs (binary or text) and TensorFlow Chrome timelines, old and new device
names alike, are read into ``StepTrace``s of ``OpRecord``s here-after; the graph builder never
looks at a file format. Parsing of TensorFlow's label strings lives here too, because both
formats carry the same labels.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# "[mklcpu 0.1MB 0.1MB] fc1/Relu = _MklNativeFusedMatMul(features, fc1/MatMul/ReadVariableOp_S1, ^x)"
_OP_LABEL = re.compile(r"^(?:\[[^\]]*\]\s*)*(?P<name>[^=\s]+) = (?P<op>[^(\s]+)\((?P<inputs>.*)\)\s*$")
# "[73728B] [100.77Mb/s] edge_18_Conv2D_1/ReadVariableOp from /job:ps/... to /job:worker/..."
_TRANSFER_LABEL = re.compile(
    r"^\[(?P<size>[\d.]+)(?P<unit>B|KB|MB|GB)\]\s*(?:\[[^\]]*\]\s*)?(?P<edge>\S+) from (?P<src>\S+) to (?P<dst>\S+)"
)
_UNIT_BYTES = {"B": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3}
_DEVICE = re.compile(
    r"^(?P<task>/job:[^/]+/replica:\d+/task:\d+)?/(?:device:)?(?P<type>[A-Za-z]+):(?P<index>\d+)(?P<rest>/.*)?$"
)
_RENDEZVOUS_SUFFIX = re.compile(r"_S\d+$")
_EDGE_PREFIX = re.compile(r"^edge_\d+_")


@dataclass(frozen=True)
class TransferInfo:
    bytes: int
    rendezvous: str  # "edge_16_fc1/MatMul/ReadVariableOp"
    src_device: str
    dst_device: str


@dataclass(frozen=True)
class OpRecord:
    """One executed op (or one received tensor) of one traced step."""

    device: str  # normalized: /job:J/replica:R/task:T/device:CPU:0
    name: str
    op: str
    start_us: float
    duration_us: float
    lane: str  # "thread:3", "stream:12", "memcpy"
    inputs: tuple[str, ...] = ()
    control_inputs: tuple[str, ...] = ()
    transfer: TransferInfo | None = None

    @property
    def end_us(self) -> float:
        return self.start_us + self.duration_us


@dataclass(frozen=True)
class RendezvousPair:
    """A _Send/_Recv pair from the partition graphs: which op produced a transfer, which node receives it."""

    rendezvous: str
    send_device: str
    recv_device: str
    producer: str
    recv_node: str


@dataclass(frozen=True)
class StepTrace:
    records: tuple[OpRecord, ...]
    rendezvous: tuple[RendezvousPair, ...]
    source_kind: str  # "runmetadata" or "chrome"
    path: str


def normalize_device(device: str) -> tuple[str, str]:
    """Split a device name into (canonical device, lane hint).

    TF 1.x writes ``/job:localhost/replica:0/task:0/cpu:0`` and GPU tracers add
    ``/gpu:0/stream:12``; both become ``/job:.../device:GPU:0`` plus a lane such as ``stream:12``.
    """
    match = _DEVICE.match(device.strip())
    if not match:
        return device, ""
    task = match.group("task") or "/job:localhost/replica:0/task:0"
    canonical = f"{task}/device:{match.group('type').upper()}:{match.group('index')}"
    rest = (match.group("rest") or "").strip("/")
    return canonical, rest


def job_of(device: str) -> str:
    match = re.match(r"^/job:([^/]+)", device)
    return match.group(1) if match else ""


def parse_op_label(label: str) -> tuple[str, str, tuple[str, ...], tuple[str, ...]] | None:
    """``name = Op(a, b:1, ^c)`` -> (name, op, data inputs, control inputs), or None."""
    match = _OP_LABEL.match(label)
    if not match:
        return None
    data, control = [], []
    for raw in match.group("inputs").split(","):
        item = raw.strip()
        if not item:
            continue
        if item.startswith("^"):
            control.append(strip_output_index(item[1:]))
        else:
            data.append(strip_output_index(item))
    return match.group("name"), match.group("op"), tuple(data), tuple(control)


def parse_transfer_label(label: str) -> TransferInfo | None:
    match = _TRANSFER_LABEL.match(label.strip())
    if not match:
        return None
    size = float(match.group("size")) * _UNIT_BYTES[match.group("unit")]
    return TransferInfo(
        bytes=int(round(size)),
        rendezvous=match.group("edge"),
        src_device=normalize_device(match.group("src"))[0],
        dst_device=normalize_device(match.group("dst"))[0],
    )


def strip_output_index(name: str) -> str:
    head, sep, tail = name.rpartition(":")
    return head if sep and tail.isdigit() else name


def strip_rendezvous_suffix(name: str) -> str:
    return _RENDEZVOUS_SUFFIX.sub("", name)


def producer_of_rendezvous(rendezvous: str) -> str:
    """``edge_16_fc1/MatMul/ReadVariableOp`` -> ``fc1/MatMul/ReadVariableOp`` (the sending op)."""
    return strip_output_index(_EDGE_PREFIX.sub("", rendezvous))
