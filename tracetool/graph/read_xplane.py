"""Read a TF2 profiler XSpace (``*.xplane.pb``) into ProfilerEvents, without TensorFlow."""

from __future__ import annotations

from pathlib import Path

from google.protobuf.message import DecodeError

from tracetool.errors import ToolError
from tracetool.graph.profiler_events import ProfilerCapture, ProfilerEvent, StatValue
from tracetool.graph.xplane_schema import xspace_class


def _stat_value(stat, stat_names: dict[int, str]) -> StatValue:  # type: ignore[no-untyped-def]
    kind = stat.WhichOneof("value")
    if kind == "ref_value":
        return stat_names.get(stat.ref_value, "")
    if kind == "bytes_value":
        return stat.bytes_value.hex()
    return getattr(stat, kind) if kind else ""


def read_xplane(path: Path) -> ProfilerCapture:
    raw = path.read_bytes()
    if not raw:
        raise ToolError(f"{path} is empty; give the .xplane.pb the TF2 profiler saved under plugins/profile/<run>/")
    space = xspace_class()()
    try:
        space.ParseFromString(raw)
    except DecodeError:
        raise ToolError(f"{path} is not an XSpace protobuf; is the .xplane.pb file damaged or truncated?") from None
    events: list[ProfilerEvent] = []
    for plane in space.planes:
        stat_names = {key: meta.name for key, meta in plane.stat_metadata.items()}
        metadata = dict(plane.event_metadata.items())
        for line in plane.lines:
            lane = line.display_name or line.name
            line_start_us = line.timestamp_ns * 1e-3
            for event in line.events:
                meta = metadata.get(event.metadata_id)
                name = meta.name if meta is not None else ""
                stats: dict[str, StatValue] = {}
                if meta is not None:
                    for stat in meta.stats:
                        stats[stat_names.get(stat.metadata_id, "")] = _stat_value(stat, stat_names)
                for stat in event.stats:
                    stats[stat_names.get(stat.metadata_id, "")] = _stat_value(stat, stat_names)
                events.append(ProfilerEvent(plane.name, lane, name, line_start_us + event.offset_ps * 1e-6,
                                            event.duration_ps * 1e-6, stats))
    if not events:
        raise ToolError(f"{path} is an XSpace with no events; was the profiler stopped before any step ran?")
    return ProfilerCapture(tuple(events), "xplane", str(path))
