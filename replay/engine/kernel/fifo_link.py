"""``fifo`` sharing as arrays: the reference's ``_FifoLink``, both directions at once.

One transfer in service per direction, at the slower of the PS's interface and its worker's
(one cap for all, or one per worker where interfaces differ); the rest wait in a heap keyed
``(step start, order rank, seq)``, the reference's ``(order key, seq)`` (``waiting``). The
arithmetic is the reference's, operation for operation, so finish times agree to the bit.

State is a tuple of arrays whose first index is the direction (DOWNLINK, UPLINK).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from replay.engine.kernel.jit import per_event
from replay.engine.kernel.waiting import queue_pop, queue_push

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
def fifo_add(st: tuple, d: int, now: float, step_start_s: float, rank: float, worker: int, node: int,
             bits: float) -> float:
    """Everything queues; an idle direction picks the smallest key when its timer fires at ``now``,
    so transfers that become ready together are served in policy order."""
    lf, li = st[0], st[1]
    li[d, I_SEQ] += 1
    queue_push(st[2], st[3], st[4], st[5], st[6], st[7], li[d, I_WAITING], d, step_start_s, rank, li[d, I_SEQ],
               worker, node, bits)
    li[d, I_WAITING] += 1
    if li[d, I_BUSY] == 0:
        lf[d, F_FINISH] = now
    return lf[d, F_FINISH]


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
        _, worker, node, bits = queue_pop(st[2], st[3], st[4], st[5], st[6], st[7], li[d, I_WAITING], d)
        li[d, I_WAITING] -= 1
        li[d, I_CURRENT_WORKER] = worker
        li[d, I_CURRENT_NODE] = node
        lf[d, F_CURRENT_BITS] = bits
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
