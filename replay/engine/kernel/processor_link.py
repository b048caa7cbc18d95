"""``fair-per-transfer`` sharing where the workers' interfaces do not bind, as arrays: the
reference's ``_SharedProcessorLink``, both directions at once.

Processor sharing: every transfer in flight gets ``capacity / active``. One virtual clock counts
the bits served to each transfer since the direction was last idle, so a transfer's finish is a
fixed tag (the clock when it joined plus its bits) and the transfers finish in tag order: one
heap of ``(tag, seq, worker, node)``, as the reference's ``heapq``, and each arrival or
departure is O(log n). The arithmetic is the reference's, operation for operation. Each
worker's transfers in flight are counted, and the workers with any, so ``connections`` is O(1).

Under a stream cap (``waiting``) a transfer first waits: ``processor_arrive`` advances the clock
and counts it, ``processor_admit`` starts it when a stream frees.

State is a tuple of arrays whose first index is the direction (DOWNLINK, UPLINK).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from replay.engine.kernel.jit import per_event

# Float fields of a direction.
F_CAPACITY = 0
F_CLOCK = 1  # bits served to each active transfer since the direction was last idle
F_T_LAST = 2
F_SERVED = 3
# Integer fields of a direction.
I_ACTIVE = 0  # transfers in flight: the heap's size
I_SEQ = 1
I_CONNECTIONS = 2  # workers with transfers in flight


@njit(cache=True)
def processor_new(workers: int, room: int, capacity_bps: np.ndarray) -> tuple:
    """Both directions idle, with room for ``room`` transfers in flight on each."""
    lf = np.zeros((2, 4), dtype=np.float64)
    li = np.zeros((2, 3), dtype=np.int64)
    for d in range(2):
        lf[d, F_CAPACITY] = capacity_bps[d]
    size = max(room, 1)
    return (lf, li, np.zeros((2, size)), np.zeros((2, size), dtype=np.int64), np.zeros((2, size), dtype=np.int64),
            np.zeros((2, size), dtype=np.int64), np.zeros((2, max(workers, 1)), dtype=np.int64))


@per_event
def _advance(st: tuple, d: int, now: float) -> None:
    lf, li = st[0], st[1]
    active = li[d, I_ACTIVE]
    if active:
        dt = now - lf[d, F_T_LAST]
        lf[d, F_CLOCK] += dt * lf[d, F_CAPACITY] / active
        lf[d, F_SERVED] += dt * lf[d, F_CAPACITY]
    lf[d, F_T_LAST] = now


@per_event
def _sooner(tag: np.ndarray, seq: np.ndarray, d: int, a: int, b: int) -> bool:
    return tag[d, a] < tag[d, b] or (tag[d, a] == tag[d, b] and seq[d, a] < seq[d, b])


@per_event
def _swap(st: tuple, d: int, a: int, b: int) -> None:
    """Exchange two entries of the heap of ``d``."""
    tag, seq, worker, node = st[2], st[3], st[4], st[5]
    tag[d, a], tag[d, b] = tag[d, b], tag[d, a]
    seq[d, a], seq[d, b] = seq[d, b], seq[d, a]
    worker[d, a], worker[d, b] = worker[d, b], worker[d, a]
    node[d, a], node[d, b] = node[d, b], node[d, a]


@per_event
def processor_admit(st: tuple, d: int, worker: int, node: int, bits: float, seq: int) -> None:
    """Start a transfer (the reference's ``_start``), the clock already advanced to now."""
    li, tag, seqs, in_flight = st[1], st[2], st[3], st[6]
    pos = li[d, I_ACTIVE]
    li[d, I_ACTIVE] = pos + 1
    tag[d, pos] = st[0][d, F_CLOCK] + bits
    seqs[d, pos] = seq
    st[4][d, pos] = worker
    st[5][d, pos] = node
    while pos > 0:
        parent = (pos - 1) >> 1
        if not _sooner(tag, seqs, d, pos, parent):
            break
        _swap(st, d, pos, parent)
        pos = parent
    if in_flight[d, worker] == 0:
        li[d, I_CONNECTIONS] += 1
    in_flight[d, worker] += 1


@per_event
def _finish(st: tuple, d: int, done_worker: np.ndarray, done_node: np.ndarray, n_done: int) -> None:
    """Take the first transfer off the heap into ``done_*[n_done]`` (the reference's ``_finish``)."""
    li, tag, seqs, in_flight = st[1], st[2], st[3], st[6]
    worker = st[4][d, 0]
    done_worker[n_done] = worker
    done_node[n_done] = st[5][d, 0]
    size = li[d, I_ACTIVE] - 1
    li[d, I_ACTIVE] = size
    _swap(st, d, 0, size)
    pos = 0
    while True:
        child = 2 * pos + 1
        if child >= size:
            break
        if child + 1 < size and _sooner(tag, seqs, d, child + 1, child):
            child += 1
        if not _sooner(tag, seqs, d, child, pos):
            break
        _swap(st, d, pos, child)
        pos = child
    in_flight[d, worker] -= 1
    if in_flight[d, worker] == 0:
        li[d, I_CONNECTIONS] -= 1


@per_event
def processor_next_time(st: tuple, d: int) -> float:
    lf, li = st[0], st[1]
    active = li[d, I_ACTIVE]
    if active == 0:
        return math.inf
    at = lf[d, F_T_LAST] + (st[2][d, 0] - lf[d, F_CLOCK]) * active / lf[d, F_CAPACITY]
    return at if at < math.inf else math.inf


@per_event
def processor_add(st: tuple, d: int, now: float, worker: int, node: int, bits: float) -> float:
    """A transfer asks for direction ``d`` (no stream cap); returns the direction's next finish time."""
    li = st[1]
    _advance(st, d, now)
    li[d, I_SEQ] += 1
    processor_admit(st, d, worker, node, bits, li[d, I_SEQ])
    return processor_next_time(st, d)


@per_event
def processor_arrive(st: tuple, d: int, now: float) -> int:
    """A transfer arrives at ``d`` under a stream cap and waits: the clock advances to now; returns its seq."""
    _advance(st, d, now)
    li = st[1]
    li[d, I_SEQ] += 1
    return li[d, I_SEQ]


@per_event
def processor_pop_finished(st: tuple, d: int, now: float, done_worker: np.ndarray, done_node: np.ndarray) -> int:
    """The transfers of ``d`` that finish at ``now``, written to ``done_*`` in the reference's order."""
    lf, li, tag = st[0], st[1], st[2]
    _advance(st, d, now)
    clock = lf[d, F_CLOCK]
    limit = clock + (1e-9 * abs(clock) + 1e-6)
    n_done = 0
    while li[d, I_ACTIVE] > 0 and tag[d, 0] <= limit:
        _finish(st, d, done_worker, done_node, n_done)
        n_done += 1
    active = li[d, I_ACTIVE]
    if n_done == 0 and active > 0 and lf[d, F_T_LAST] + (tag[d, 0] - clock) * active / lf[d, F_CAPACITY] <= now:
        # The clock cannot resolve what is left of this transfer: it is finished.
        _finish(st, d, done_worker, done_node, n_done)
        n_done += 1
    if li[d, I_ACTIVE] == 0:
        lf[d, F_CLOCK] = 0.0
    return n_done


@per_event
def processor_set_capacity(st: tuple, d: int, now: float, capacity_bps: float) -> None:
    _advance(st, d, now)
    st[0][d, F_CAPACITY] = capacity_bps


@per_event
def processor_served_bits(st: tuple, d: int, now: float) -> float:
    _advance(st, d, now)
    return st[0][d, F_SERVED]


@per_event
def processor_admitted(st: tuple, d: int) -> int:
    """Transfers in flight on ``d``: what the stream cap counts."""
    return st[1][d, I_ACTIVE]


@per_event
def processor_connections(st: tuple, d: int) -> int:
    return st[1][d, I_CONNECTIONS]
