"""A compiled graph and a duration model laid out as the typed NumPy arrays the kernel reads.

The kernel takes no Python objects, so everything it needs per node is an int64 or float64
array here: successors as a CSR pair, lanes, bytes as bits, and the hold times (gap plus
duration, in seconds) computed with the very NumPy expressions of the reference engine, so the
two engines start from the same floats. Per-worker queues are sized here too: a lane's ready
ops and a PS device's waiting ops never exceed the nodes on that lane times the workers. This
module computes nothing per event and imports no numba.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from replay.engine.compiled import DOWNLINK, KIND_COMPUTE, KIND_DOWNLOAD, KIND_PS, KIND_UPLOAD, CompiledGraph
from replay.engine.order import OrderPolicy, PriorityOrder, first_use_ranks

_I64 = np.int64


@dataclass(frozen=True)
class KernelGraph:
    """Per-node arrays by node index (``lane`` as in ``CompiledGraph``), plus the sizes of the
    per-worker queues. Times are seconds, already scaled by the duration model."""

    kind: np.ndarray  # int64 kind codes (replay.engine.compiled)
    succ_ptr: np.ndarray  # int64, n + 1: node i's successors are succ_idx[succ_ptr[i]:succ_ptr[i + 1]]
    succ_idx: np.ndarray
    indegree: np.ndarray
    lane: np.ndarray
    lane_rank: np.ndarray  # int64 trace rank: ready ops of one lane start in this order
    order_rank: np.ndarray  # float64 second key of the transfer order (trace rank or first use)
    bits: np.ndarray  # float64, 8 x bytes
    ps_gap_s: np.ndarray  # float64: a PS op's wait before it queues for its device
    mean_hold_s: np.ndarray  # float64, 1 x n: hold times of a step with mean durations
    sample_offset: np.ndarray  # int64: node i's samples are samples_us[offset : offset + count]
    sample_count: np.ndarray  # float64, as the reference multiplies it
    samples_us: np.ndarray
    op_scale_s: np.ndarray  # float64: seconds per sampled microsecond (0 for transfers)
    held_gap_s: np.ndarray  # float64: the dispatch gap a compute op holds its lane for
    lane_offset: np.ndarray  # int64 per worker lane: where its queue starts in a worker's row
    lane_width: int  # compute ops per step: the length of a worker's row of lane queues
    ps_queue_offset: np.ndarray  # int64 per PS lane, into one flat ring of (worker, node) codes
    ps_queue_capacity: np.ndarray  # int64 per PS lane: PS ops on the lane times workers
    transfers_per_worker: np.ndarray  # int64 per direction: the most transfers a worker has in flight
    transfer_nodes: np.ndarray  # int64: the downloads and uploads, in node order
    start: int
    n_downloads: int
    n_worker_lanes: int
    n_ps_lanes: int


def layout_graph(compiled: CompiledGraph, workers: int, compute_scale: float, order: OrderPolicy | None) -> KernelGraph:
    """The kernel's arrays for ``workers`` workers; hold times as ``replay.engine.loop.simulate``
    computes them for ``compute_scale``."""
    n = compiled.n
    kind = np.array(compiled.kind, dtype=_I64)
    succ_ptr = np.zeros(n + 1, dtype=_I64)
    succ_ptr[1:] = np.cumsum([len(s) for s in compiled.successors])
    succ_idx = np.array([s for succ in compiled.successors for s in succ], dtype=_I64)
    lane = np.array(compiled.lane, dtype=_I64)

    # The reference's own expressions, so hold times agree to the bit.
    scale_s = compute_scale * 1e-6
    is_compute = np.array([k == KIND_COMPUTE for k in compiled.kind])
    is_op = np.array([k in (KIND_COMPUTE, KIND_PS) for k in compiled.kind])
    gap = np.array(compiled.gap_us, dtype=np.float64)
    held_gap_s = np.where(is_compute, gap, 0.0) * scale_s
    ps_gap_s = np.array([(g * scale_s if k == KIND_PS else 0.0) for g, k in zip(compiled.gap_us, compiled.kind,
                                                                                 strict=True)], dtype=np.float64)
    op_scale_s = np.where(is_op, scale_s, 0.0)
    mean_hold_s = np.array(compiled.mean_us) * op_scale_s + held_gap_s

    if type(order) is PriorityOrder:
        order_rank = np.array(first_use_ranks(compiled), dtype=np.float64)
    else:
        order_rank = np.array(compiled.trace_rank, dtype=np.float64)

    n_lanes = compiled.n_worker_lanes
    lane_size = np.zeros(n_lanes, dtype=_I64)
    n_ps = compiled.n_ps_lanes
    ps_size = np.zeros(n_ps, dtype=_I64)
    per_direction = np.zeros(2, dtype=_I64)
    for i, k in enumerate(compiled.kind):
        if k == KIND_COMPUTE:
            lane_size[compiled.lane[i]] += 1
        elif k == KIND_PS:
            ps_size[compiled.lane[i]] += 1
        elif k in (KIND_DOWNLOAD, KIND_UPLOAD):
            per_direction[DOWNLINK if k == KIND_DOWNLOAD else 1] += 1
    lane_offset = np.zeros(n_lanes, dtype=_I64)
    lane_offset[1:] = np.cumsum(lane_size)[:-1]
    ps_capacity = ps_size * workers
    ps_offset = np.zeros(n_ps, dtype=_I64)
    ps_offset[1:] = np.cumsum(ps_capacity)[:-1]

    return KernelGraph(
        kind=kind,
        succ_ptr=succ_ptr,
        succ_idx=succ_idx,
        indegree=np.array(compiled.indegree, dtype=_I64),
        lane=lane,
        lane_rank=np.array(compiled.trace_rank, dtype=_I64),
        order_rank=order_rank,
        bits=np.array([8.0 * b for b in compiled.bytes], dtype=np.float64),
        ps_gap_s=ps_gap_s,
        mean_hold_s=mean_hold_s.reshape(1, n),
        sample_offset=np.asarray(compiled.sample_offset, dtype=_I64),
        sample_count=compiled.sample_count.astype(np.float64),
        samples_us=np.asarray(compiled.samples_us, dtype=np.float64),
        op_scale_s=op_scale_s,
        held_gap_s=held_gap_s,
        lane_offset=lane_offset,
        lane_width=int(lane_size.sum()),
        ps_queue_offset=ps_offset,
        ps_queue_capacity=ps_capacity,
        transfers_per_worker=per_direction,
        transfer_nodes=np.array([i for i, k in enumerate(compiled.kind) if k in (KIND_DOWNLOAD, KIND_UPLOAD)],
                                dtype=_I64),
        start=compiled.start,
        n_downloads=compiled.n_downloads,
        n_worker_lanes=n_lanes,
        n_ps_lanes=n_ps,
    )


def draw_hold_s(graph: KernelGraph, rng: np.random.Generator) -> np.ndarray:
    """One step's hold times drawn from the samples, as the reference draws them: one uniform
    per node from ``rng``, so the stream advances exactly as the reference's does."""
    index = graph.sample_offset + (rng.random(graph.kind.shape[0]) * graph.sample_count).astype(np.int64)
    return graph.samples_us[index] * graph.op_scale_s + graph.held_gap_s
