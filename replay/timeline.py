"""Synthetic multi-node timelines in Chrome Trace Event format (Perfetto, chrome://tracing).

Process and thread naming follows TensorFlow's own timelines (``tensorflow/python/client/
timeline.py``): one process per device named ``<device> Compute``, ``ph: X`` op events with
``args.name`` / ``args.op``, flow arrows (``ph: s`` / ``ph: f``) for data movement. Each worker
``i`` gets the profiled worker's devices renamed to ``task:i``; the PS devices keep their names.
The PS network interface is one more process with a lane per direction; transfers that overlap
in time (fair sharing) are spread over extra lanes of that direction so no two slices of one
lane overlap, as the viewers require. Times are microseconds. This module only formats.
"""

from __future__ import annotations

import re
from typing import Any

from replay.engine.compiled import DOWNLINK, KIND_DOWNLOAD, KIND_END, KIND_PS, KIND_START, KIND_UPLOAD, CompiledGraph
from replay.engine.loop import TimelineRecord

_WORKER_TASK = re.compile(r"/job:worker/replica:(\d+)/task:\d+")
_THREAD = re.compile(r"#(?:thread|stream):(\d+)$")
# Zero-length ops stay zero-length: any padding could make neighbours on one lane overlap.
_MIN_DUR_US = 0.0


def worker_device(device: str, worker: int) -> str:
    return _WORKER_TASK.sub(lambda m: f"/job:worker/replica:{m.group(1)}/task:{worker}", device)


def _lane_device(lane_name: str) -> tuple[str, int]:
    """Split ``<device>#thread:<n>`` into the device and a thread id."""
    device, _, _ = lane_name.partition("#")
    match = _THREAD.search(lane_name)
    return device or lane_name, int(match.group(1)) if match else 0


def chrome_trace(
    record: TimelineRecord,
    compiled: CompiledGraph,
    workers: int,
    metadata: dict[str, Any] | None = None,
    max_events: int = 200_000,
) -> dict[str, Any]:
    """Build the ``{"traceEvents": [...]}`` document for a recorded run."""
    events: list[dict[str, Any]] = []
    pids: dict[str, int] = {}

    def pid_of(process: str) -> int:
        if process not in pids:
            pids[process] = len(pids) + 1
            events.append(
                {"ph": "M", "name": "process_name", "pid": pids[process], "tid": 0, "args": {"name": process}}
            )
            events.append(
                {
                    "ph": "M",
                    "name": "process_sort_index",
                    "pid": pids[process],
                    "tid": 0,
                    "args": {"sort_index": pids[process]},
                }
            )
        return pids[process]

    named_threads: set[tuple[int, int]] = set()

    def name_thread(pid: int, tid: int, name: str) -> None:
        if (pid, tid) not in named_threads:
            named_threads.add((pid, tid))
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}})

    # Where each worker lane / PS lane lives.
    worker_lane_place: list[list[tuple[int, int]]] = []
    for w in range(workers):
        places = []
        for lane_name in compiled.worker_lanes:
            device, tid = _lane_device(lane_name)
            pid = pid_of(f"{worker_device(device, w)} Compute")
            name_thread(pid, tid, f"thread:{tid}")
            places.append((pid, tid))
        worker_lane_place.append(places)
    for w in range(workers):
        pid = worker_lane_place[w][0][0]
        name_thread(pid, 1000, "steps")
    ps_place = []
    for lane_name in compiled.ps_lanes:
        pid = pid_of(f"{lane_name} Compute")
        name_thread(pid, 0, "thread:0")
        ps_place.append((pid, 0))
    link_pid = pid_of("PS network interface")

    def to_us(t: float) -> float:
        return round(t * 1e6, 3)

    # Where each (worker, node, step) op was drawn, so flows can land on it.
    placed: dict[tuple[int, int, int], tuple[int, int, float]] = {}
    budget = max_events

    for w, step, start, end, outcome in record.steps:
        pid = worker_lane_place[w][0][0]
        lost = outcome != "applied"  # a stale or late gradient the PS refused, or an interrupted step
        events.append(
            {
                "ph": "X",
                "name": f"step {step} ({outcome})" if lost else f"step {step}",
                "cat": "step",
                "pid": pid,
                "tid": 1000,
                "ts": to_us(start),
                "dur": max(_MIN_DUR_US, to_us(end) - to_us(start)),
                "args": {"name": f"worker {w} step {step}", "op": "Step", "step_time_ms": (end - start) * 1e3,
                         "outcome": outcome},
                **({"cname": "terrible"} if lost else {}),
            }
        )

    # Behind a deep upload buffer a step's first requests reach the PS only after the backlog
    # other workers queued: drawn beside the step so the gap before its downloads has a name.
    for w, step, start, wait in record.request_waits:
        if wait <= 0.0:
            continue
        pid = worker_lane_place[w][0][0]
        name_thread(pid, 1001, "requests in the upload queue")
        events.append(
            {
                "ph": "X",
                "name": "request queue",
                "cat": "RequestQueue",
                "pid": pid,
                "tid": 1001,
                "ts": to_us(start),
                "dur": max(_MIN_DUR_US, to_us(start + wait) - to_us(start)),
                "args": {"name": f"worker {w} step {step}", "wait_ms": wait * 1e3},
            }
        )

    for w, i, start, end, step in record.ops:
        if budget <= 0:
            break
        kind = compiled.kind[i]
        if kind in (KIND_START, KIND_END):
            continue
        if kind == KIND_PS:
            pid, tid = ps_place[compiled.lane[i]]
            device = compiled.ps_lanes[compiled.lane[i]]
        else:
            pid, tid = worker_lane_place[w][compiled.lane[i]]
            device = worker_device(_lane_device(compiled.worker_lanes[compiled.lane[i]])[0], w)
        ts = to_us(start)
        dur = max(_MIN_DUR_US, to_us(end) - ts)
        events.append(
            {
                "ph": "X",
                "name": compiled.ops[i] or compiled.names[i],
                "cat": "Op",
                "pid": pid,
                "tid": tid,
                "ts": ts,
                "dur": dur,
                "args": {"name": compiled.names[i], "op": compiled.ops[i], "device": device, "worker": w, "step": step},
            }
        )
        placed[(w, i, step)] = (pid, tid, ts)
        budget -= 1

    # Transfers: greedy lane assignment per direction so slices never overlap within one lane.
    lane_ends: dict[int, list[float]] = {DOWNLINK: [], 1 - DOWNLINK: []}
    flow_id = 0
    for w, i, requested, link_start, link_end, arrival, step in sorted(record.transfers, key=lambda r: r[3]):
        if budget <= 0:
            break
        direction = compiled.lane[i]
        ts = to_us(link_start)
        dur = max(_MIN_DUR_US, to_us(link_end) - ts)
        ends = lane_ends[direction]
        slot = next((k for k, e in enumerate(ends) if e <= ts), len(ends))
        if slot == len(ends):
            ends.append(0.0)
        ends[slot] = ts + dur
        tid = (0 if direction == DOWNLINK else 500) + slot
        arrow = "PS -> workers" if direction == DOWNLINK else "workers -> PS"
        label = "downlink" if direction == DOWNLINK else "uplink"
        name_thread(link_pid, tid, f"{label} ({arrow})" if slot == 0 else f"{label} #{slot + 1}")
        tensor = compiled.tensors[i]
        events.append(
            {
                "ph": "X",
                "name": tensor,
                "cat": "Transfer",
                "pid": link_pid,
                "tid": tid,
                "ts": ts,
                "dur": dur,
                "args": {
                    "name": compiled.names[i],
                    "op": "RecvTensor" if compiled.kind[i] in (KIND_DOWNLOAD, KIND_UPLOAD) else compiled.ops[i],
                    "tensor": tensor,
                    "bytes": compiled.bytes[i],
                    "worker": w,
                    "step": step,
                    "queued_us": round((link_start - requested) * 1e6, 3),
                    "arrival_us": to_us(arrival),
                },
            }
        )
        budget -= 1
        # Arrows from the transfer to the ops that consume it.
        for consumer in compiled.successors[i]:
            target = placed.get((w, consumer, step))
            if target is None:
                continue
            flow_id += 1
            c_pid, c_tid, c_ts = target
            events.append(
                {"ph": "s", "id": flow_id, "name": tensor, "cat": "DataFlow", "pid": link_pid, "tid": tid, "ts": ts}
            )
            events.append(
                {
                    "ph": "f",
                    "bp": "e",
                    "id": flow_id,
                    "name": tensor,
                    "cat": "DataFlow",
                    "pid": c_pid,
                    "tid": c_tid,
                    "ts": c_ts,
                }
            )

    document: dict[str, Any] = {"traceEvents": events, "displayTimeUnit": "ms"}
    if metadata:
        document["metadata"] = metadata
    return document
