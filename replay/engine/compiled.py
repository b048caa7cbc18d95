"""A step graph compiled once into flat lists and arrays, the form the event loop reads.

The event loop must not touch dataclasses or dicts per event, so everything it needs per node
(kind code, successors, in-degree, lane, bytes, durations) is laid out here by node index.
Nothing in this module simulates; it only reshapes a ``StepGraph``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetool.errors import ToolError
from tracetool.graph.stepgraph import (
    COMPUTE,
    DOWNLOAD,
    PS_COMPUTE,
    STEP_END,
    STEP_START,
    UPLOAD,
    StepGraph,
    StepNode,
)

# Node kind codes used by the engine.
KIND_START = 0
KIND_END = 1
KIND_COMPUTE = 2
KIND_PS = 3
KIND_DOWNLOAD = 4
KIND_UPLOAD = 5
_KIND_CODES = {
    STEP_START: KIND_START,
    STEP_END: KIND_END,
    COMPUTE: KIND_COMPUTE,
    PS_COMPUTE: KIND_PS,
    DOWNLOAD: KIND_DOWNLOAD,
    UPLOAD: KIND_UPLOAD,
}

DOWNLINK = 0  # PS -> workers
UPLINK = 1  # workers -> PS


@dataclass(frozen=True)
class CompiledGraph:
    """Per-node facts by node index; ``lane`` means a worker-lane index for compute ops, a PS-lane
    index for PS ops and the direction (DOWNLINK / UPLINK) for transfers."""

    n: int
    start: int
    end: int
    kind: tuple[int, ...]
    successors: tuple[tuple[int, ...], ...]
    predecessors: tuple[tuple[int, ...], ...]
    indegree: tuple[int, ...]
    lane: tuple[int, ...]
    bytes: tuple[int, ...]
    mean_us: tuple[float, ...]
    gap_us: tuple[float, ...]
    start_offset_us: tuple[float, ...]
    trace_rank: tuple[int, ...]
    # Duration samples, flattened: node i's samples are samples_us[sample_offset[i] : + sample_count[i]].
    samples_us: np.ndarray
    sample_offset: np.ndarray
    sample_count: np.ndarray
    worker_lanes: tuple[str, ...]
    ps_lanes: tuple[str, ...]
    names: tuple[str, ...]
    ops: tuple[str, ...]
    tensors: tuple[str, ...]
    download_bytes: int
    upload_bytes: int
    n_downloads: int

    @property
    def n_worker_lanes(self) -> int:
        return len(self.worker_lanes)

    @property
    def n_ps_lanes(self) -> int:
        return len(self.ps_lanes)


def compile_graph(graph: StepGraph) -> CompiledGraph:
    """Lay a checked step graph out by node index; refuse graphs the engine cannot run."""
    nodes = graph.nodes
    n = len(nodes)
    successors: list[list[int]] = [[] for _ in range(n)]
    predecessors: list[list[int]] = [[] for _ in range(n)]
    seen: set[tuple[int, int]] = set()
    for edge in graph.edges:
        # A data edge and a control edge between the same pair are one dependency to the engine.
        if (edge.src, edge.dst) in seen:
            continue
        seen.add((edge.src, edge.dst))
        successors[edge.src].append(edge.dst)
        predecessors[edge.dst].append(edge.src)

    worker_lanes: list[str] = []
    ps_lanes: list[str] = []
    lane: list[int] = []
    for node in nodes:
        if node.kind == COMPUTE:
            name = node.lane or node.device or "worker"
            if name not in worker_lanes:
                worker_lanes.append(name)
            lane.append(worker_lanes.index(name))
        elif node.kind == PS_COMPUTE:
            name = node.device or node.lane or "/job:ps/replica:0/task:0/device:CPU:0"
            if name not in ps_lanes:
                ps_lanes.append(name)
            lane.append(ps_lanes.index(name))
        elif node.kind == DOWNLOAD:
            lane.append(DOWNLINK)
        elif node.kind == UPLOAD:
            lane.append(UPLINK)
        else:
            lane.append(-1)

    counts = np.array([max(1, len(node.duration.samples_us)) for node in nodes], dtype=np.int64)
    offsets = np.zeros(n, dtype=np.int64)
    if n > 1:
        offsets[1:] = np.cumsum(counts)[:-1]
    flat: list[float] = []
    for node in nodes:
        flat.extend(node.duration.samples_us or (node.duration.mean_us,))
    samples = np.maximum(np.array(flat, dtype=np.float64), 0.0)

    order = sorted(range(n), key=lambda i: (nodes[i].start_offset_us, i))
    rank = [0] * n
    for position, index in enumerate(order):
        rank[index] = position

    kinds = tuple(_KIND_CODES[node.kind] for node in nodes)
    starts = [i for i, k in enumerate(kinds) if k == KIND_START]
    ends = [i for i, k in enumerate(kinds) if k == KIND_END]
    if len(starts) != 1 or len(ends) != 1:
        raise ToolError("step graph needs exactly one step_start and one step_end")
    if not any(_always_takes_time(node) for node in nodes):
        raise ToolError(
            "no op of the step graph is sure to take time (every duration sample and gap is 0 us and no transfer "
            "carries a byte): a step could end as it starts, so no rate can be replayed; rebuild the graph with "
            "'tracetool graph'"
        )
    if not worker_lanes:
        # A graph with no worker op still runs: its worker spends no time computing.
        worker_lanes.append("/job:worker/replica:0/task:0/device:CPU:0#thread:0")
    if not ps_lanes:
        ps_lanes.append("/job:ps/replica:0/task:0/device:CPU:0")

    return CompiledGraph(
        n=n,
        start=starts[0],
        end=ends[0],
        kind=kinds,
        successors=tuple(tuple(s) for s in successors),
        predecessors=tuple(tuple(p) for p in predecessors),
        indegree=tuple(len(p) for p in predecessors),
        lane=tuple(lane),
        bytes=tuple(max(0, int(node.bytes)) for node in nodes),
        mean_us=tuple(max(0.0, node.duration.mean_us) for node in nodes),
        gap_us=tuple(max(0.0, node.gap_us) for node in nodes),
        start_offset_us=tuple(node.start_offset_us for node in nodes),
        trace_rank=tuple(rank),
        samples_us=samples,
        sample_offset=offsets,
        sample_count=counts,
        worker_lanes=tuple(worker_lanes),
        ps_lanes=tuple(ps_lanes),
        names=tuple(node.name for node in nodes),
        ops=tuple(node.op for node in nodes),
        tensors=tuple(node.tensor or node.name for node in nodes),
        download_bytes=sum(node.bytes for node in nodes if node.kind == DOWNLOAD),
        upload_bytes=sum(node.bytes for node in nodes if node.kind == UPLOAD),
        n_downloads=sum(1 for node in nodes if node.kind == DOWNLOAD),
    )


def _always_takes_time(node: StepNode) -> bool:
    """Whether every replay of ``node`` takes time, whatever sample is drawn. A step whose ops may
    all take none can end at the instant it starts, and the event loop then never advances."""
    if node.kind in (DOWNLOAD, UPLOAD):
        return node.bytes > 0
    if node.kind in (COMPUTE, PS_COMPUTE):
        return node.gap_us > 0.0 or min(node.duration.samples_us or (node.duration.mean_us,)) > 0.0
    return False


def critical_path_us(compiled: CompiledGraph, transfer_us: list[float] | None = None) -> list[float]:
    """Earliest start of every node with unlimited lanes and mean durations (plus gaps).

    ``transfer_us`` gives each transfer's time; without it transfers take no time. Used by the
    first-use priority order and by tests as the contention-free answer.
    """
    order = topological_order(compiled)
    earliest = [0.0] * compiled.n
    for i in order:
        if compiled.kind[i] in (KIND_DOWNLOAD, KIND_UPLOAD):
            length = transfer_us[i] if transfer_us is not None else 0.0
        else:
            length = compiled.gap_us[i] + compiled.mean_us[i]
        finish = earliest[i] + length
        for s in compiled.successors[i]:
            if finish > earliest[s]:
                earliest[s] = finish
    return earliest


def topological_order(compiled: CompiledGraph) -> list[int]:
    pending = list(compiled.indegree)
    ready = [compiled.start]
    order: list[int] = []
    while ready:
        i = ready.pop()
        order.append(i)
        for s in compiled.successors[i]:
            pending[s] -= 1
            if pending[s] == 0:
                ready.append(s)
    return order
