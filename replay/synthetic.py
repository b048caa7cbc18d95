"""Small step graphs built in code, with known answers: for tests, benchmarks and examples.

``chain_graph`` is the simplest parameter-server step (download, compute, upload, update);
``random_graph`` draws a valid step graph of the same shape as the collector's (PS reads feed
downloads, downloads feed worker ops, worker ops feed uploads, uploads feed PS updates).
They produce ordinary ``StepGraph`` objects that pass the schema's invariants.
"""

from __future__ import annotations

import random

from tracetool.graph.stepgraph import (
    COMPUTE,
    DOWNLOAD,
    PS_COMPUTE,
    STEP_END,
    STEP_START,
    UPLOAD,
    DurationStats,
    StepEdge,
    StepGraph,
    StepNode,
)

WORKER_DEVICE = "/job:worker/replica:0/task:0/device:CPU:0"
PS_DEVICE = "/job:ps/replica:0/task:0/device:CPU:0"


class GraphBuilder:
    """Appends nodes and edges; ``build`` checks the invariants."""

    def __init__(self) -> None:
        self.nodes: list[StepNode] = []
        self.edges: list[StepEdge] = []

    def add(
        self,
        kind: str,
        name: str,
        duration_us: float | tuple[float, ...] = 0.0,
        *,
        lane: str = "",
        bytes_: int = 0,
        start_offset_us: float = 0.0,
        gap_us: float = 0.0,
        after: tuple[int, ...] = (),
    ) -> int:
        samples = duration_us if isinstance(duration_us, tuple) else (float(duration_us),)
        if kind == COMPUTE:
            device, lane = WORKER_DEVICE, lane or f"{WORKER_DEVICE}#thread:0"
            op = "MatMul"
        elif kind == PS_COMPUTE:
            device, lane = PS_DEVICE, lane or PS_DEVICE
            op = "ResourceApplyGradientDescent" if "update" in name else "ReadVariableOp"
        elif kind == DOWNLOAD:
            device, lane, op = WORKER_DEVICE, "downlink", "RecvTensor"
        elif kind == UPLOAD:
            device, lane, op = PS_DEVICE, "uplink", "RecvTensor"
        else:
            device, lane, op = "", "", ""
        node_id = len(self.nodes)
        self.nodes.append(
            StepNode(
                id=node_id,
                kind=kind,
                name=name,
                device=device,
                lane=lane,
                duration=DurationStats.of(samples),
                start_offset_us=start_offset_us,
                gap_us=gap_us,
                op=op,
                bytes=bytes_,
                tensor=name if kind in (DOWNLOAD, UPLOAD) else "",
            )
        )
        for src in after:
            self.edges.append(StepEdge(src, node_id))
        return node_id

    def build(self, model: dict | None = None, link_calibration: dict | None = None) -> StepGraph:
        graph = StepGraph(
            nodes=list(self.nodes),
            edges=list(self.edges),
            model=dict(model or {"name": "synthetic", "batch_size": 32}),
            source={"kind": "synthetic"},
            link_calibration=dict(link_calibration or {}),
        )
        graph.check_invariants()
        return graph


def chain_graph(
    compute_us: float | tuple[float, ...] = 1000.0,
    download_bytes: int = 1_000_000,
    upload_bytes: int = 1_000_000,
    ps_update_us: float = 0.0,
    model: dict | None = None,
    link_calibration: dict | None = None,
) -> StepGraph:
    """step_start -> download -> compute -> upload -> ps update -> step_end."""
    b = GraphBuilder()
    start = b.add(STEP_START, "step_start")
    down = b.add(DOWNLOAD, "weights", bytes_=download_bytes, start_offset_us=1.0, after=(start,))
    comp = b.add(COMPUTE, "matmul", compute_us, start_offset_us=2.0, after=(down,))
    up = b.add(UPLOAD, "gradients", bytes_=upload_bytes, start_offset_us=3.0, after=(comp,))
    upd = b.add(PS_COMPUTE, "update", ps_update_us, start_offset_us=4.0, after=(up,))
    b.add(STEP_END, "step_end", after=(upd,))
    return b.build(model, link_calibration)


def random_graph(
    rng: random.Random,
    layers: int = 4,
    lanes: int = 1,
    max_compute_us: float = 2000.0,
    max_bytes: int = 500_000,
    samples: int = 3,
) -> StepGraph:
    """A random layered PS step: per layer a PS read, a download, forward and backward ops
    (on random lanes), a gradient upload and a PS update; backward runs in reverse layer order."""
    b = GraphBuilder()
    offset = 0.0

    def next_offset() -> float:
        nonlocal offset
        offset += 1.0
        return offset

    def lane() -> str:
        return f"{WORKER_DEVICE}#thread:{rng.randrange(lanes)}"

    def durations() -> tuple[float, ...]:
        mean = rng.uniform(1.0, max_compute_us)
        return tuple(max(0.0, rng.gauss(mean, mean * 0.1)) for _ in range(samples))

    start = b.add(STEP_START, "step_start")
    previous = start
    forward = []
    for layer in range(layers):
        read = b.add(PS_COMPUTE, f"read{layer}", rng.uniform(1, 50), start_offset_us=next_offset(), after=(start,))
        down = b.add(
            DOWNLOAD, f"w{layer}", bytes_=rng.randrange(0, max_bytes), start_offset_us=next_offset(), after=(read,)
        )
        op = b.add(
            COMPUTE, f"fwd{layer}", durations(), lane=lane(), start_offset_us=next_offset(), after=(previous, down)
        )
        forward.append(op)
        previous = op
    ends = []
    for layer in reversed(range(layers)):
        op = b.add(
            COMPUTE,
            f"bwd{layer}",
            durations(),
            lane=lane(),
            start_offset_us=next_offset(),
            after=(previous, forward[layer]),
        )
        previous = op
        up = b.add(UPLOAD, f"g{layer}", bytes_=rng.randrange(0, max_bytes), start_offset_us=next_offset(), after=(op,))
        ends.append(b.add(PS_COMPUTE, f"update{layer}", rng.uniform(1, 50), start_offset_us=next_offset(), after=(up,)))
    b.add(STEP_END, "step_end", after=(previous, *ends))
    return b.build()
