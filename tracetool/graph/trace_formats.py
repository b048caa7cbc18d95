"""Naming the trace formats this tool does not read, so the user learns what to give instead.

The graph builder reads TF1-style RunMetadata step stats (``.pb``/``.pbtxt``), TensorFlow's
Chrome timelines made from them (``.json``/``.json.gz``) and, given the model's variables, the
TF2 profiler's captures (``*.xplane.pb``, ``*.trace.json.gz``). PyTorch's profiler writes
Chrome traces too; refusing one as "damaged" or "not a TensorFlow timeline" would send a user
looking for a fault that is not there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tracetool.errors import ToolError

_HOW_TO_TRACE = ("profile the model with 'tracetool profile', or save the RunMetadata of a session.run "
                 "called with RunOptions(trace_level=FULL_TRACE)")


def refuse_foreign_by_name(path: Path) -> None:
    """Refuse files whose name already says they are a format this tool does not read."""
    name = path.name.lower()
    if name.endswith((".pt.trace.json", ".pt.trace.json.gz")):
        raise ToolError(f"{path} is a PyTorch profiler trace; this tool reads TensorFlow traces: {_HOW_TO_TRACE}")


def describe_foreign_chrome_trace(data: Any, process_names: list[str]) -> str | None:
    """What a Chrome trace without TensorFlow's '<device> Compute' processes is, if it can tell."""
    if isinstance(data, dict) and ("deviceProperties" in data or "distributedInfo" in data
                                   or "schemaVersion" in data):
        return "a PyTorch profiler trace"
    return None


def refuse_foreign_chrome_trace(path: Path, data: Any, process_names: list[str]) -> None:
    what = describe_foreign_chrome_trace(data, process_names)
    if what is not None:
        raise ToolError(f"{path} is {what}, not a TensorFlow timeline of step stats: {_HOW_TO_TRACE}")
