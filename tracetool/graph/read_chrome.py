"""Read a TensorFlow Chrome timeline (``.json`` or ``.json.gz``) into a StepTrace.

TF's timeline writer keeps each op's name, type, inputs, thread and times, but for a transfer
only the word ``RecvTensor``: no bytes, no tensor. The collector puts the transfer label into
the name, so its own timelines are complete; a foreign distributed timeline without it is
refused with a message naming what is missing.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from tracetool.errors import ToolError
from tracetool.graph.trace_formats import refuse_foreign_chrome_trace
from tracetool.graph.trace_records import (
    OpRecord,
    StepTrace,
    normalize_device,
    parse_transfer_label,
    strip_output_index,
)

_SKIPPED_OPS = {"_SOURCE", "_SINK"}


def load_json(path: Path) -> Any:
    raw = path.read_bytes()
    if not raw:
        raise ToolError(f"{path} is empty; give a TensorFlow Chrome timeline (.json or .json.gz)")
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError):
            raise ToolError(f"{path} is a damaged gzip file") from None
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ToolError(f"{path} is not JSON; give a TensorFlow Chrome timeline (.json or .json.gz)") from None


def read_chrome_timeline(path: Path) -> StepTrace:
    return chrome_timeline_from_data(load_json(path), path)


def chrome_timeline_from_data(data: Any, path: Path) -> StepTrace:
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list) or not events:
        raise ToolError(f"{path} is JSON but not a Chrome trace (no traceEvents list)")
    processes: dict[Any, str] = {}
    for event in events:
        if isinstance(event, dict) and event.get("ph") == "M" and event.get("name") == "process_name":
            processes[event.get("pid")] = str(event.get("args", {}).get("name", ""))
    compute_pids = {pid: name[: -len(" Compute")] for pid, name in processes.items() if name.endswith(" Compute")}
    if not compute_pids:
        refuse_foreign_chrome_trace(path, data, list(processes.values()))
        raise ToolError(f"{path} is a Chrome trace but not a TensorFlow timeline (no '<device> Compute' processes)")
    records: list[OpRecord] = []
    unlabeled_transfers = 0
    for event in events:
        if not isinstance(event, dict) or event.get("ph") != "X" or event.get("pid") not in compute_pids:
            continue
        args = event.get("args", {}) or {}
        name = str(args.get("name", event.get("name", "")))
        op = str(args.get("op", event.get("name", "")))
        if name in _SKIPPED_OPS:
            continue
        device, lane_hint = normalize_device(compute_pids[event["pid"]])
        lane = lane_hint or f"thread:{event.get('tid', 0)}"
        start_us = float(event.get("ts", 0.0))
        duration_us = float(event.get("dur", 0.0))
        if op == "RecvTensor":
            transfer = parse_transfer_label(name)
            if transfer is None:
                unlabeled_transfers += 1
                continue
            records.append(OpRecord(device, transfer.rendezvous, op, start_us, duration_us, lane, transfer=transfer))
            continue
        inputs = [str(v) for k, v in sorted(args.items()) if k.startswith("input")]
        data_inputs = tuple(strip_output_index(i) for i in inputs if not i.startswith("^"))
        control_inputs = tuple(strip_output_index(i[1:]) for i in inputs if i.startswith("^"))
        records.append(OpRecord(device, name, op, start_us, duration_us, lane, data_inputs, control_inputs))
    if unlabeled_transfers:
        raise ToolError(
            f"{path} has {unlabeled_transfers} RecvTensor events without byte counts or tensor names "
            "(TensorFlow's timeline drops them); give the step's RunMetadata (.pb) instead"
        )
    if not records:
        raise ToolError(f"{path} is a TensorFlow timeline with no op events")
    return StepTrace(tuple(records), (), "chrome", str(path))
