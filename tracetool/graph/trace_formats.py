"""Naming the trace formats this tool does not read, so the user learns what to give instead.

The graph builder reads TF1-style RunMetadata step stats (``.pb``/``.pbtxt``) and TensorFlow's
Chrome timelines made from them (``.json``/``.json.gz``). Neighbouring formats look alike from
the outside: the TF2 profiler (``tf.profiler.experimental``, TensorBoard's profile plugin)
writes XPlane protobufs (``*.xplane.pb``) and trace-viewer JSON (``*.trace.json.gz``), and
PyTorch's profiler writes Chrome traces too. Refusing those as "damaged" or "not a TensorFlow
timeline" sends a user looking for a fault that is not there.
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
    if name.endswith(".xplane.pb"):
        raise ToolError(f"{path} is a TF2 profiler XPlane file (tf.profiler / TensorBoard), not a RunMetadata; "
                        f"this tool reads TF1-style step stats: {_HOW_TO_TRACE}")
    if name.endswith((".trace.json.gz", ".trace.json")) and not name.endswith(".timeline.json"):
        raise ToolError(f"{path} is a TF2 profiler trace-viewer file (tf.profiler / TensorBoard), not a TensorFlow "
                        f"timeline of step stats: {_HOW_TO_TRACE}")
    if name.endswith((".pt.trace.json", ".pt.trace.json.gz")):
        raise ToolError(f"{path} is a PyTorch profiler trace; this tool reads TensorFlow traces: {_HOW_TO_TRACE}")


def describe_foreign_chrome_trace(data: Any, process_names: list[str]) -> str | None:
    """What a Chrome trace without TensorFlow's '<device> Compute' processes is, if it can tell."""
    if isinstance(data, dict) and ("deviceProperties" in data or "distributedInfo" in data
                                   or "schemaVersion" in data):
        return "a PyTorch profiler trace"
    if any(name.startswith(("/host:", "/device:")) for name in process_names):
        return "a TF2 profiler trace-viewer file (tf.profiler / TensorBoard)"
    return None


def refuse_foreign_chrome_trace(path: Path, data: Any, process_names: list[str]) -> None:
    what = describe_foreign_chrome_trace(data, process_names)
    if what is not None:
        raise ToolError(f"{path} is {what}, not a TensorFlow timeline of step stats: {_HOW_TO_TRACE}")
