"""Transfers waiting for a link direction, in the order policy's order: the reference's
``waiting`` heap of ``(key, seq, worker, node, bits)``, with the key of the ``trace``,
``priority`` or ``random`` order, ``(step start, rank)``.

``fifo`` keeps every transfer here until it serves it; ``fair``, ``fair-per-transfer`` and
``seniority`` keep here the transfers beyond ``--max-streams`` (``max_streams``), admitted as
others finish. Under a stream
cap the reference's links queue every arrival and admit at the end of the instant, when their
timer fires (``admit_at``): so transfers that become ready together are admitted in policy order.
``seq`` is the link's own count of arrivals, unique, so entries never tie and the pop order is
the reference's whatever the heap's layout.

``waiting_new`` builds the stream caps' state: per direction the cap (0: none), the count of
waiting transfers, when the link admits next and the transfers admitted at the last admission
(for timelines), then the heap's arrays, first index the direction (DOWNLINK, UPLINK).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from replay.engine.kernel.heap import before3
from replay.engine.kernel.jit import per_event

# Integer fields of a direction in the stream caps' state.
I_MAX_STREAMS = 0  # 0: no cap
I_WAITING = 1
I_ADMITTED = 2  # transfers admitted at the last admission
# Float fields.
F_ADMIT_AT = 0  # when the link admits waiting transfers next (inf: not due)


@njit(cache=True)
def waiting_new(size: int, max_streams: np.ndarray) -> tuple:
    """Room for ``size`` waiting transfers per direction; ``max_streams[d]`` the cap (0: none)."""
    wi = np.zeros((2, 3), dtype=np.int64)
    wf = np.full((2, 1), math.inf)
    for d in range(2):
        wi[d, I_MAX_STREAMS] = max_streams[d]
    room = max(size, 1)
    return (wi, wf, np.zeros((2, room)), np.zeros((2, room)), np.zeros((2, room), dtype=np.int64),
            np.zeros((2, room), dtype=np.int64), np.zeros((2, room), dtype=np.int64), np.zeros((2, room)),
            np.zeros((2, room), dtype=np.int64), np.zeros((2, room), dtype=np.int64))


@per_event
def _move(k_start: np.ndarray, k_rank: np.ndarray, k_seq: np.ndarray, k_worker: np.ndarray, k_node: np.ndarray,
          k_bits: np.ndarray, d: int, to: int, source: int) -> None:
    """Copy the entry at ``source`` of the heap of ``d`` to ``to``."""
    k_start[d, to] = k_start[d, source]
    k_rank[d, to] = k_rank[d, source]
    k_seq[d, to] = k_seq[d, source]
    k_worker[d, to] = k_worker[d, source]
    k_node[d, to] = k_node[d, source]
    k_bits[d, to] = k_bits[d, source]


@per_event
def _place(k_start: np.ndarray, k_rank: np.ndarray, k_seq: np.ndarray, k_worker: np.ndarray, k_node: np.ndarray,
           k_bits: np.ndarray, d: int, pos: int, step_start_s: float, rank: float, seq: int, worker: int, node: int,
           bits: float) -> None:
    """Write an entry at ``pos`` of the heap of ``d``."""
    k_start[d, pos] = step_start_s
    k_rank[d, pos] = rank
    k_seq[d, pos] = seq
    k_worker[d, pos] = worker
    k_node[d, pos] = node
    k_bits[d, pos] = bits


@per_event
def queue_push(k_start: np.ndarray, k_rank: np.ndarray, k_seq: np.ndarray, k_worker: np.ndarray,
               k_node: np.ndarray, k_bits: np.ndarray, pos: int, d: int, step_start_s: float, rank: float,
               seq: int, worker: int, node: int, bits: float) -> None:
    """Add a transfer to the heap of ``d``, which held ``pos`` transfers."""
    while pos > 0:
        parent = (pos - 1) >> 1
        if before3(step_start_s, rank, seq, k_start[d, parent], k_rank[d, parent], k_seq[d, parent]):
            _move(k_start, k_rank, k_seq, k_worker, k_node, k_bits, d, pos, parent)
            pos = parent
        else:
            break
    _place(k_start, k_rank, k_seq, k_worker, k_node, k_bits, d, pos, step_start_s, rank, seq, worker, node, bits)


@per_event
def queue_pop(k_start: np.ndarray, k_rank: np.ndarray, k_seq: np.ndarray, k_worker: np.ndarray,
              k_node: np.ndarray, k_bits: np.ndarray, size: int, d: int) -> tuple:
    """Take the first of the ``size`` transfers of ``d``; returns its (seq, worker, node, bits)."""
    top = (k_seq[d, 0], k_worker[d, 0], k_node[d, 0], k_bits[d, 0])
    size -= 1
    if size > 0:
        l_start, l_rank, l_seq = k_start[d, size], k_rank[d, size], k_seq[d, size]
        l_worker, l_node, l_bits = k_worker[d, size], k_node[d, size], k_bits[d, size]
        pos = 0
        while True:
            child = 2 * pos + 1
            if child >= size:
                break
            right = child + 1
            if right < size and before3(k_start[d, right], k_rank[d, right], k_seq[d, right], k_start[d, child],
                                        k_rank[d, child], k_seq[d, child]):
                child = right
            if before3(k_start[d, child], k_rank[d, child], k_seq[d, child], l_start, l_rank, l_seq):
                _move(k_start, k_rank, k_seq, k_worker, k_node, k_bits, d, pos, child)
                pos = child
            else:
                break
        _place(k_start, k_rank, k_seq, k_worker, k_node, k_bits, d, pos, l_start, l_rank, l_seq, l_worker, l_node,
               l_bits)
    return top


@per_event
def waiting_push(wq: tuple, d: int, now: float, admitted: int, step_start_s: float, rank: float, seq: int,
                 worker: int, node: int, bits: float) -> None:
    """A transfer arrives at a capped direction holding ``admitted`` transfers: it waits, and the
    link admits at the end of this instant if there is room."""
    wi, wf = wq[0], wq[1]
    queue_push(wq[2], wq[3], wq[4], wq[5], wq[6], wq[7], wi[d, I_WAITING], d, step_start_s, rank, seq, worker,
               node, bits)
    wi[d, I_WAITING] += 1
    if admitted < wi[d, I_MAX_STREAMS]:
        wf[d, F_ADMIT_AT] = now


@per_event
def waiting_pop(wq: tuple, d: int) -> tuple:
    """Admit the first waiting transfer of ``d``: its (seq, worker, node, bits), kept in the last
    admission's list."""
    wi = wq[0]
    size = wi[d, I_WAITING]
    wi[d, I_WAITING] = size - 1
    top = queue_pop(wq[2], wq[3], wq[4], wq[5], wq[6], wq[7], size, d)
    k = wi[d, I_ADMITTED]
    wq[8][d, k] = top[1]
    wq[9][d, k] = top[2]
    wi[d, I_ADMITTED] = k + 1
    return top
