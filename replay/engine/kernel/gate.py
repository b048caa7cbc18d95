"""The workers held back by a gating discipline (ssp, sync, backup, cutoff), and which it lets go.

The reference loop keeps the waiting workers in the order they began to wait; when a worker
ends a step it asks that worker first, then the others in order (``release_waiting``), and the
ones still waiting keep that order, the asking worker in front. Here they are a ring that takes
a worker at either end: the asking worker is pushed in front, workers interrupted by the
discipline at the back.

Asking everyone is a scan of the ring, which the reference makes at every step end. The kernel
makes it only when an answer may have changed: under ``sync`` a worker may start while tokens
are left, whoever it is, so the ring's front takes them; under ``ssp`` and ``cutoff`` the
answer of a waiting worker changes only with the discipline's ``epoch`` (``discipline``), so
while that stands only the asking worker is asked, and the others, asked before, say no again.
The workers let go come out in the reference's order.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from replay.engine.kernel.discipline import I_CODE, I_EPOCH, may_start
from replay.engine.kernel.jit import per_event
from replay.engine.kernel.support import DISCIPLINE_SYNC

G_HEAD = 0
G_SIZE = 1
G_SCANNED = 2  # the discipline's epoch at the last full scan


@njit(cache=True)
def gate_new(workers: int) -> tuple:
    """No worker waiting; room for every worker at once (each waits at most once)."""
    return np.zeros(3, dtype=np.int64), np.zeros(max(workers, 1), dtype=np.int64)


@per_event
def wait_at_back(gate: tuple, v: int) -> None:
    """Worker ``v`` (interrupted by the discipline) begins to wait, behind the others."""
    gi, ring = gate
    slot = gi[G_HEAD] + gi[G_SIZE]
    if slot >= ring.shape[0]:
        slot -= ring.shape[0]
    ring[slot] = v
    gi[G_SIZE] += 1


@per_event
def _pop_front(gi: np.ndarray, ring: np.ndarray) -> int:
    v = ring[gi[G_HEAD]]
    gi[G_HEAD] = gi[G_HEAD] + 1 if gi[G_HEAD] + 1 < ring.shape[0] else 0
    gi[G_SIZE] -= 1
    return v


@per_event
def release(gate: tuple, ds: tuple, first: int, ready: np.ndarray) -> int:
    """The waiting workers the discipline lets go now, asked in order with ``first`` (the worker
    that just ended its step, or -1) in front; writes them to ``ready`` and returns how many."""
    gi, ring = gate
    size = ring.shape[0]
    if first >= 0:
        head = gi[G_HEAD] - 1 if gi[G_HEAD] > 0 else size - 1
        ring[head] = first
        gi[G_HEAD] = head
        gi[G_SIZE] += 1
    di = ds[0]
    count = 0
    if di[I_CODE] == DISCIPLINE_SYNC:
        # a yes takes a token whoever asks, and once the tokens are out every answer is no
        while gi[G_SIZE] > 0 and may_start(ds, ring[gi[G_HEAD]]):
            ready[count] = _pop_front(gi, ring)
            count += 1
        return count
    if di[I_EPOCH] == gi[G_SCANNED]:
        if first >= 0 and may_start(ds, first):
            ready[0] = _pop_front(gi, ring)
            count = 1
        return count
    gi[G_SCANNED] = di[I_EPOCH]
    head = gi[G_HEAD]
    kept = 0
    for q in range(gi[G_SIZE]):
        slot = head + q
        if slot >= size:
            slot -= size
        v = ring[slot]
        if may_start(ds, v):
            ready[count] = v
            count += 1
        else:
            keep = head + kept
            if keep >= size:
                keep -= size
            ring[keep] = v
            kept += 1
    gi[G_SIZE] = kept
    return count
