"""Read TensorBoard's trace-viewer JSON of a TF2 profile (``*.trace.json.gz``) into ProfilerEvents.

The trace viewer names a process by its XPlane (``/host:CPU``, ``/device:GPU:0``) and a thread
by its XLine; an op event is named by its type and carries ``long_name`` = ``name:type``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tracetool.errors import ToolError
from tracetool.graph.profiler_events import ProfilerCapture, ProfilerEvent, StatValue


def is_trace_viewer(data: Any) -> bool:
    """Whether a loaded Chrome-trace JSON is TensorBoard's view of a TF2 profile."""
    events = data.get("traceEvents") if isinstance(data, dict) else None
    if not isinstance(events, list):
        return False
    return any(isinstance(e, dict) and e.get("ph") == "M" and e.get("name") == "process_name"
               and str((e.get("args") or {}).get("name", "")).startswith(("/host:", "/device:")) for e in events)


def trace_viewer_capture(data: Any, path: Path) -> ProfilerCapture:
    raw_events = data["traceEvents"]
    processes: dict[Any, str] = {}
    threads: dict[tuple[Any, Any], str] = {}
    for event in raw_events:
        if not isinstance(event, dict) or event.get("ph") != "M":
            continue
        name = str((event.get("args") or {}).get("name", ""))
        if event.get("name") == "process_name":
            processes[event.get("pid")] = name
        elif event.get("name") == "thread_name":
            threads[(event.get("pid"), event.get("tid"))] = name
    events: list[ProfilerEvent] = []
    for event in raw_events:
        if not isinstance(event, dict) or event.get("ph") != "X" or event.get("pid") not in processes:
            continue
        try:
            start_us, duration_us = float(event.get("ts", 0.0)), float(event.get("dur", 0.0))
        except (TypeError, ValueError):
            raise ToolError(f"{path}: an event has a non-numeric time ({event.get('ts')!r}); "
                            "is the file damaged?") from None
        args = event.get("args") or {}
        stats: dict[str, StatValue] = {str(k): v if isinstance(v, (int, float)) else str(v) for k, v in args.items()}
        pid, tid = event.get("pid"), event.get("tid")
        events.append(ProfilerEvent(processes[pid], threads.get((pid, tid), str(tid)), str(event.get("name", "")),
                                    start_us, duration_us, stats))
    if not events:
        raise ToolError(f"{path} is a TF2 trace-viewer file with no timed events")
    return ProfilerCapture(tuple(events), "trace-viewer", str(path))
