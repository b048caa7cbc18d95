"""``fifo`` sharing as arrays: the reference's ``_FifoLink``, both directions at once.

One transfer in service per direction, at the slower of the PS's interface and its worker's
(one cap for all, or one per worker where interfaces differ); the rest wait in a heap keyed
``(step start, order rank, seq)``, the reference's ``(order key, seq)`` with the key of the
``trace`` or ``priority`` order. The arithmetic is the reference's, operation for operation, so
finish times agree to the bit.

State is a tuple of arrays whose first index is the direction (DOWNLINK, UPLINK).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from replay.engine.kernel.jit import per_event

# Float fields of a direction.
F_CAPACITY = 0
F_WORKER_CAP = 1
F_RATE = 2
F_FINISH = 3
F_STARTED = 4
F_SERVED = 5
F_CURRENT_BITS = 6  # bits of the transfer in service not yet banked in F_SERVED
# Integer fields of a direction.
I_BUSY = 0  # 1 while a transfer is in service
I_CURRENT_WORKER = 1
I_CURRENT_NODE = 2
I_SEQ = 3
I_WAITING = 4
I_UNEQUAL = 5  # 1: workers' interfaces differ (``caps``), the rate is set per transfer served


@njit(cache=True)
def fifo_new(waiting_capacity: int, capacity_bps: np.ndarray, worker_cap_bps: np.ndarray, caps: np.ndarray,
             unequal: np.ndarray) -> tuple:
    """Both directions idle; at most ``waiting_capacity`` transfers wait on one direction. Where
    ``unequal[d]``, ``caps[d]`` holds each worker's interface and ``worker_cap_bps[d]`` the slowest
    (the reference's ``worker_capacity``)."""
    lf = np.zeros((2, 7), dtype=np.float64)
    li = np.zeros((2, 6), dtype=np.int64)
    for d in range(2):
        li[d, I_UNEQUAL] = unequal[d]
        lf[d, F_CAPACITY] = capacity_bps[d]
        lf[d, F_WORKER_CAP] = worker_cap_bps[d]
        lf[d, F_RATE] = worker_cap_bps[d] if worker_cap_bps[d] < capacity_bps[d] else capacity_bps[d]
        lf[d, F_FINISH] = math.inf
    size = max(waiting_capacity, 1)
    step_start = np.zeros((2, size), dtype=np.float64)
    rank = np.zeros((2, size), dtype=np.float64)
    seq = np.zeros((2, size), dtype=np.int64)
    worker = np.zeros((2, size), dtype=np.int64)
    node = np.zeros((2, size), dtype=np.int64)
    bits = np.zeros((2, size), dtype=np.float64)
    return lf, li, step_start, rank, seq, worker, node, bits, caps


@per_event
def _before(a_start: float, a_rank: float, a_seq: int, b_start: float, b_rank: float, b_seq: int) -> bool:
    if a_start != b_start:
        return a_start < b_start
    if a_rank != b_rank:
        return a_rank < b_rank
    return a_seq < b_seq


@per_event
def fifo_add(st: tuple, d: int, now: float, step_start_s: float, rank: float, worker: int, node: int,
             bits: float) -> float:
    """Everything queues; an idle direction picks the smallest key when its timer fires at ``now``,
    so transfers that become ready together are served in policy order."""
    lf, li, k_start, k_rank, k_seq, k_worker, k_node, k_bits = st[0], st[1], st[2], st[3], st[4], st[5], st[6], st[7]
    li[d, I_SEQ] += 1
    new_seq = li[d, I_SEQ]
    pos = li[d, I_WAITING]
    li[d, I_WAITING] = pos + 1
    while pos > 0:
        parent = (pos - 1) >> 1
        if _before(step_start_s, rank, new_seq, k_start[d, parent], k_rank[d, parent], k_seq[d, parent]):
            k_start[d, pos] = k_start[d, parent]
            k_rank[d, pos] = k_rank[d, parent]
            k_seq[d, pos] = k_seq[d, parent]
            k_worker[d, pos] = k_worker[d, parent]
            k_node[d, pos] = k_node[d, parent]
            k_bits[d, pos] = k_bits[d, parent]
            pos = parent
        else:
            break
    k_start[d, pos] = step_start_s
    k_rank[d, pos] = rank
    k_seq[d, pos] = new_seq
    k_worker[d, pos] = worker
    k_node[d, pos] = node
    k_bits[d, pos] = bits
    if li[d, I_BUSY] == 0:
        lf[d, F_FINISH] = now
    return lf[d, F_FINISH]


@per_event
def _pop_waiting(st: tuple, d: int) -> int:
    """Move the first waiting transfer into the service fields of ``d``; returns its worker."""
    lf, li, k_start, k_rank, k_seq, k_worker, k_node, k_bits = st[0], st[1], st[2], st[3], st[4], st[5], st[6], st[7]
    size = li[d, I_WAITING] - 1
    li[d, I_WAITING] = size
    top_worker, top_node, top_bits = k_worker[d, 0], k_node[d, 0], k_bits[d, 0]
    if size > 0:
        l_start, l_rank, l_seq = k_start[d, size], k_rank[d, size], k_seq[d, size]
        l_worker, l_node, l_bits = k_worker[d, size], k_node[d, size], k_bits[d, size]
        pos = 0
        while True:
            child = 2 * pos + 1
            if child >= size:
                break
            right = child + 1
            if right < size and _before(k_start[d, right], k_rank[d, right], k_seq[d, right], k_start[d, child],
                                        k_rank[d, child], k_seq[d, child]):
                child = right
            if _before(k_start[d, child], k_rank[d, child], k_seq[d, child], l_start, l_rank, l_seq):
                k_start[d, pos] = k_start[d, child]
                k_rank[d, pos] = k_rank[d, child]
                k_seq[d, pos] = k_seq[d, child]
                k_worker[d, pos] = k_worker[d, child]
                k_node[d, pos] = k_node[d, child]
                k_bits[d, pos] = k_bits[d, child]
                pos = child
            else:
                break
        k_start[d, pos] = l_start
        k_rank[d, pos] = l_rank
        k_seq[d, pos] = l_seq
        k_worker[d, pos] = l_worker
        k_node[d, pos] = l_node
        k_bits[d, pos] = l_bits
    li[d, I_CURRENT_WORKER] = top_worker
    li[d, I_CURRENT_NODE] = top_node
    lf[d, F_CURRENT_BITS] = top_bits
    return top_worker


@per_event
def fifo_next_time(st: tuple, d: int) -> float:
    return st[0][d, F_FINISH]


@per_event
def fifo_pop_finished(st: tuple, d: int, now: float, done_worker: np.ndarray, done_node: np.ndarray) -> int:
    lf, li = st[0], st[1]
    n_done = 0
    if li[d, I_BUSY]:
        finish = lf[d, F_FINISH]
        if now < finish - (1e-9 * abs(finish) + 1e-6):
            return 0
        lf[d, F_SERVED] += lf[d, F_CURRENT_BITS]
        li[d, I_BUSY] = 0
        done_worker[0] = li[d, I_CURRENT_WORKER]
        done_node[0] = li[d, I_CURRENT_NODE]
        n_done = 1
    lf[d, F_FINISH] = math.inf
    if li[d, I_WAITING]:
        _pop_waiting(st, d)
        li[d, I_BUSY] = 1
        if li[d, I_UNEQUAL]:  # the reference's _start: min(capacity, the worker's interface)
            cap = st[8][d, li[d, I_CURRENT_WORKER]]
            lf[d, F_RATE] = cap if cap < lf[d, F_CAPACITY] else lf[d, F_CAPACITY]
        lf[d, F_STARTED] = now
        lf[d, F_FINISH] = now + lf[d, F_CURRENT_BITS] / lf[d, F_RATE]
    return n_done


@per_event
def fifo_set_capacity(st: tuple, d: int, now: float, capacity_bps: float) -> None:
    lf, li = st[0], st[1]
    lf[d, F_CAPACITY] = capacity_bps
    cap = lf[d, F_WORKER_CAP]
    if li[d, I_UNEQUAL] and li[d, I_BUSY]:
        cap = st[8][d, li[d, I_CURRENT_WORKER]]
    rate = cap if cap < capacity_bps else capacity_bps
    if li[d, I_BUSY]:
        # bank what the transfer in service has got so far; the rest goes at the new rate
        done = (now - lf[d, F_STARTED]) * lf[d, F_RATE]
        lf[d, F_SERVED] += done
        left = lf[d, F_CURRENT_BITS] - done
        lf[d, F_CURRENT_BITS] = left
        lf[d, F_STARTED] = now
        lf[d, F_FINISH] = now + left / rate
    lf[d, F_RATE] = rate


@per_event
def fifo_served_bits(st: tuple, d: int, now: float) -> float:
    lf, li = st[0], st[1]
    if li[d, I_BUSY]:
        return lf[d, F_SERVED] + (now - lf[d, F_STARTED]) * lf[d, F_RATE]
    return lf[d, F_SERVED]


@per_event
def fifo_connections(st: tuple, d: int) -> int:
    return st[1][d, I_BUSY]
