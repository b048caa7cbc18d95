"""``fair`` sharing as arrays: the reference's ``_ConnectionFairLink``, both directions at once.

Every active connection (one per worker) gets the same rate, ``min(worker cap, capacity /
active)``, and the transfers of one connection share it equally. As in the reference, one
global clock ``G`` counts the bits served to each active connection and one clock per
connection counts the bits served to each of its transfers, so a connection's next finish is a
fixed value of ``G`` until that connection changes: each arrival and departure is O(log n).

The reference keeps the connections' next finishes in a ``heapq`` with lazy deletion, keyed
``(G at finish, version, worker)``. Here each connection has exactly one live entry in an
indexed heap, updated in place, with the same key: the live entries and their order are those
of the reference, so transfers finish in the same order with the same floats. The arithmetic
is the reference's, operation for operation.

Under a stream cap a transfer first waits (``waiting``): ``fair_arrive`` only advances the
clocks and counts it, ``fair_admit`` is the reference's ``_admit`` when a stream frees, and
``fair_rerate`` sets the rate after the admissions of one instant.

State is a tuple of arrays whose first index is the direction (DOWNLINK, UPLINK).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from replay.engine.kernel.heap import before3
from replay.engine.kernel.jit import per_event

# Float fields of a direction.
F_CAPACITY = 0
F_WORKER_CAP = 1
F_RATE = 2
F_CLOCK = 3  # G: bits served to each active connection since the direction was last idle
F_T_LAST = 4
F_SERVED = 5
# Integer fields of a direction.
I_ACTIVE = 0  # connections with transfers in flight
I_ADMITTED = 1
I_SEQ = 2
I_FINISH_SIZE = 3


@njit(cache=True)
def fair_new(workers: int, per_worker: np.ndarray, capacity_bps: np.ndarray, worker_cap_bps: np.ndarray) -> tuple:
    """Both directions idle. ``per_worker[d]``: the most transfers one worker has in flight on ``d``."""
    lf = np.zeros((2, 6), dtype=np.float64)
    li = np.zeros((2, 4), dtype=np.int64)
    for d in range(2):
        lf[d, F_CAPACITY] = capacity_bps[d]
        lf[d, F_WORKER_CAP] = worker_cap_bps[d]
    width = max(per_worker[0], per_worker[1], 1)
    flow_clock = np.zeros((2, workers), dtype=np.float64)
    synced_at = np.zeros((2, workers), dtype=np.float64)
    version = np.zeros((2, workers), dtype=np.int64)
    flow_count = np.zeros((2, workers), dtype=np.int64)
    flow_tag = np.zeros((2, workers, width), dtype=np.float64)
    flow_seq = np.zeros((2, workers, width), dtype=np.int64)
    flow_node = np.zeros((2, workers, width), dtype=np.int64)
    finish_at = np.zeros((2, workers), dtype=np.float64)
    finish_version = np.zeros((2, workers), dtype=np.int64)
    finish_worker = np.zeros((2, workers), dtype=np.int64)
    finish_pos = np.full((2, workers), -1, dtype=np.int64)
    return (lf, li, flow_clock, synced_at, version, flow_count, flow_tag, flow_seq, flow_node, finish_at,
            finish_version, finish_worker, finish_pos)


# -- one connection's transfers: a heap of (tag, seq, node) -----------------------------------------------------

@per_event
def _flow_push(tag: np.ndarray, seq: np.ndarray, node: np.ndarray, count: np.ndarray, d: int, w: int,
               new_tag: float, new_seq: int, new_node: int) -> None:
    pos = count[d, w]
    count[d, w] = pos + 1
    while pos > 0:
        parent = (pos - 1) >> 1
        pt = tag[d, w, parent]
        if new_tag < pt or (new_tag == pt and new_seq < seq[d, w, parent]):
            tag[d, w, pos] = pt
            seq[d, w, pos] = seq[d, w, parent]
            node[d, w, pos] = node[d, w, parent]
            pos = parent
        else:
            break
    tag[d, w, pos] = new_tag
    seq[d, w, pos] = new_seq
    node[d, w, pos] = new_node


@per_event
def _flow_pop(tag: np.ndarray, seq: np.ndarray, node: np.ndarray, count: np.ndarray, d: int, w: int) -> int:
    top = node[d, w, 0]
    size = count[d, w] - 1
    count[d, w] = size
    if size > 0:
        last_tag = tag[d, w, size]
        last_seq = seq[d, w, size]
        last_node = node[d, w, size]
        pos = 0
        while True:
            child = 2 * pos + 1
            if child >= size:
                break
            right = child + 1
            if right < size and (tag[d, w, right] < tag[d, w, child]
                                 or (tag[d, w, right] == tag[d, w, child] and seq[d, w, right] < seq[d, w, child])):
                child = right
            ct = tag[d, w, child]
            if ct < last_tag or (ct == last_tag and seq[d, w, child] < last_seq):
                tag[d, w, pos] = ct
                seq[d, w, pos] = seq[d, w, child]
                node[d, w, pos] = node[d, w, child]
                pos = child
            else:
                break
        tag[d, w, pos] = last_tag
        seq[d, w, pos] = last_seq
        node[d, w, pos] = last_node
    return top


# -- the connections' next finishes: an indexed heap keyed (G at finish, version, worker) ------------------------

@per_event
def _finish_place(at: np.ndarray, ver: np.ndarray, who: np.ndarray, pos_of: np.ndarray, size: int, d: int,
                  pos: int, new_at: float, new_ver: int, w: int) -> None:
    """Put (new_at, new_ver, w) at ``pos`` and restore the heap order around it."""
    while pos > 0:
        parent = (pos - 1) >> 1
        if before3(new_at, new_ver, w, at[d, parent], ver[d, parent], who[d, parent]):
            at[d, pos] = at[d, parent]
            ver[d, pos] = ver[d, parent]
            who[d, pos] = who[d, parent]
            pos_of[d, who[d, pos]] = pos
            pos = parent
        else:
            break
    while True:
        child = 2 * pos + 1
        if child >= size:
            break
        right = child + 1
        if right < size and before3(at[d, right], ver[d, right], who[d, right], at[d, child], ver[d, child],
                                    who[d, child]):
            child = right
        if before3(at[d, child], ver[d, child], who[d, child], new_at, new_ver, w):
            at[d, pos] = at[d, child]
            ver[d, pos] = ver[d, child]
            who[d, pos] = who[d, child]
            pos_of[d, who[d, pos]] = pos
            pos = child
        else:
            break
    at[d, pos] = new_at
    ver[d, pos] = new_ver
    who[d, pos] = w
    pos_of[d, w] = pos


@per_event
def _finish_set(st: tuple, d: int, w: int, new_at: float, new_ver: int) -> None:
    li, at, ver, who, pos_of = st[1], st[9], st[10], st[11], st[12]
    pos = pos_of[d, w]
    if pos < 0:
        pos = li[d, I_FINISH_SIZE]
        li[d, I_FINISH_SIZE] = pos + 1
    _finish_place(at, ver, who, pos_of, li[d, I_FINISH_SIZE], d, pos, new_at, new_ver, w)


@per_event
def _finish_drop_top(st: tuple, d: int) -> None:
    li, at, ver, who, pos_of = st[1], st[9], st[10], st[11], st[12]
    pos_of[d, who[d, 0]] = -1
    size = li[d, I_FINISH_SIZE] - 1
    li[d, I_FINISH_SIZE] = size
    if size > 0:
        _finish_place(at, ver, who, pos_of, size, d, 0, at[d, size], ver[d, size], who[d, size])


# -- the link's calls, as in the reference ------------------------------------------------------------------------

@per_event
def fair_admit(st: tuple, d: int, worker: int, node: int, bits: float, seq: int) -> None:
    """A transfer joins its connection on ``d`` (the reference's ``_admit``), the clocks already
    advanced to now; the rate is the caller's to set."""
    lf, li, flow_clock, synced_at, version = st[0], st[1], st[2], st[3], st[4]
    count_of, tag, seqs, nodes = st[5], st[6], st[7], st[8]
    clock = lf[d, F_CLOCK]
    count = count_of[d, worker]
    if count:
        own = flow_clock[d, worker] + (clock - synced_at[d, worker]) / count
    else:
        own = 0.0
        li[d, I_ACTIVE] += 1
    flow_clock[d, worker] = own
    synced_at[d, worker] = clock
    _flow_push(tag, seqs, nodes, count_of, d, worker, own + bits, seq, node)
    li[d, I_ADMITTED] += 1
    v = version[d, worker] + 1
    version[d, worker] = v
    _finish_set(st, d, worker, clock + (tag[d, worker, 0] - own) * (count + 1), v)


@per_event
def _set_rate(st: tuple, d: int) -> None:
    lf, li = st[0], st[1]
    active = li[d, I_ACTIVE]
    if active:
        share = lf[d, F_CAPACITY] / active
        lf[d, F_RATE] = share if share < lf[d, F_WORKER_CAP] else lf[d, F_WORKER_CAP]


@per_event
def fair_add(st: tuple, d: int, now: float, worker: int, node: int, bits: float) -> float:
    """A transfer asks for direction ``d`` (no stream cap); returns the direction's next finish time."""
    lf, li, finish_at = st[0], st[1], st[9]
    _advance(st, d, now)
    li[d, I_SEQ] += 1
    fair_admit(st, d, worker, node, bits, li[d, I_SEQ])
    _set_rate(st, d)
    return now + (finish_at[d, 0] - lf[d, F_CLOCK]) / lf[d, F_RATE]


@per_event
def fair_arrive(st: tuple, d: int, now: float) -> int:
    """A transfer arrives at ``d`` under a stream cap and waits: the clocks advance to now; returns its seq."""
    _advance(st, d, now)
    li = st[1]
    li[d, I_SEQ] += 1
    return li[d, I_SEQ]


@per_event
def fair_admitted(st: tuple, d: int) -> int:
    """Transfers admitted to ``d`` and not finished: what the stream cap counts."""
    return st[1][d, I_ADMITTED]


@per_event
def fair_rerate(st: tuple, d: int) -> None:
    """After waiting transfers were admitted at the end of ``pop_finished``."""
    _set_rate(st, d)


@per_event
def fair_next_time(st: tuple, d: int) -> float:
    lf, li, finish_at = st[0], st[1], st[9]
    if li[d, I_FINISH_SIZE] == 0:
        return math.inf
    at = lf[d, F_T_LAST] + (finish_at[d, 0] - lf[d, F_CLOCK]) / lf[d, F_RATE]
    return at if at < math.inf else math.inf


@per_event
def fair_pop_finished(st: tuple, d: int, now: float, done_worker: np.ndarray, done_node: np.ndarray) -> int:
    """The transfers of ``d`` that finish at ``now``, written to ``done_*`` in the reference's order."""
    lf, li, flow_clock, synced_at, version = st[0], st[1], st[2], st[3], st[4]
    count_of, tag, seq, nodes = st[5], st[6], st[7], st[8]
    finish_at, finish_version, finish_worker = st[9], st[10], st[11]
    _advance(st, d, now)
    active = li[d, I_ACTIVE]
    clock = lf[d, F_CLOCK]
    limit = clock + 1e-9 * clock + 1e-6
    late = now + 1e-9 * now + 1e-6
    rate = lf[d, F_RATE]
    n_done = 0
    while li[d, I_FINISH_SIZE] > 0:
        at = finish_at[d, 0]
        v = finish_version[d, 0]
        worker = finish_worker[d, 0]
        # Finished if its clock says so; if nothing has finished yet, also when the clock cannot
        # resolve the few bits left (it was scheduled for now).
        if at > limit and (n_done > 0 or now + (at - clock) / rate > late):
            break
        _finish_drop_top(st, d)
        own = flow_clock[d, worker] + (clock - synced_at[d, worker]) / count_of[d, worker]
        synced_at[d, worker] = clock
        own_limit = own + 1e-9 * own + 1e-6
        done_worker[n_done] = worker
        done_node[n_done] = _flow_pop(tag, seq, nodes, count_of, d, worker)
        n_done += 1
        removed = 1
        while count_of[d, worker] > 0 and tag[d, worker, 0] <= own_limit:
            done_worker[n_done] = worker
            done_node[n_done] = _flow_pop(tag, seq, nodes, count_of, d, worker)
            n_done += 1
            removed += 1
        li[d, I_ADMITTED] -= removed
        v += 1
        version[d, worker] = v
        left = count_of[d, worker]
        if left > 0:
            flow_clock[d, worker] = own
            _finish_set(st, d, worker, clock + (tag[d, worker, 0] - own) * left, v)
        else:
            active -= 1
    li[d, I_ACTIVE] = active
    if not active:
        lf[d, F_CLOCK] = 0.0
    else:
        _set_rate(st, d)
    return n_done


@per_event
def _advance(st: tuple, d: int, now: float) -> None:
    """Bring ``G`` and the served bits of ``d`` up to ``now``."""
    lf, li = st[0], st[1]
    active = li[d, I_ACTIVE]
    if active:
        dt = now - lf[d, F_T_LAST]
        lf[d, F_CLOCK] += dt * lf[d, F_RATE]
        lf[d, F_SERVED] += dt * lf[d, F_RATE] * active
    lf[d, F_T_LAST] = now


@per_event
def fair_set_capacity(st: tuple, d: int, now: float, capacity_bps: float) -> None:
    _advance(st, d, now)
    st[0][d, F_CAPACITY] = capacity_bps
    _set_rate(st, d)


@per_event
def fair_served_bits(st: tuple, d: int, now: float) -> float:
    _advance(st, d, now)
    return st[0][d, F_SERVED]


@per_event
def fair_connections(st: tuple, d: int) -> int:
    return st[1][d, I_ACTIVE]
