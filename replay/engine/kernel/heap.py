"""Array binary heaps for the kernel: the event heap, and the queues of ops ready for a busy lane.

The event heap orders ``(time_s, seq)`` as the reference's ``heapq`` of
``(time, seq, code, worker, node)`` tuples does; ``seq`` is unique, so the pop order is the
same whatever the heap's internal layout. Each event's code, worker and node travel packed in
one int64 (``pack_event``). The loop makes room before each event for all it may push
(``event_grow``): the link events that a rescheduled direction leaves behind have no fixed
bound, and growing in the push itself would return arrays on every push. Nothing here knows
what an event means.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# Event codes, as in the reference loop.
EV_DONE = 0  # a node of a worker completes
EV_LINK = 1  # a link direction may have finished transfers (its version is the event's seq)
EV_PS_READY = 2  # a PS op has waited its gap and queues for its device


@njit(cache=True)
def pack_event(code: int, worker: int, node: int, n: int) -> int:
    """One int64 for an event's code, worker (a direction for link events) and node."""
    return ((worker * n + node) << 2) | code


@njit(cache=True)
def event_grow(times: np.ndarray, seqs: np.ndarray, packed: np.ndarray, size: int,
               needed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Copies of the heap's arrays with room for at least ``needed`` events."""
    grown = max(2 * times.shape[0], needed)
    t2 = np.empty(grown, dtype=np.float64)
    s2 = np.empty(grown, dtype=np.int64)
    p2 = np.empty(grown, dtype=np.int64)
    t2[:size] = times[:size]
    s2[:size] = seqs[:size]
    p2[:size] = packed[:size]
    return t2, s2, p2


@njit(cache=True)
def event_push(times: np.ndarray, seqs: np.ndarray, packed: np.ndarray, size: int, time_s: float, seq: int,
               payload: int) -> int:
    """Push one event (the caller keeps room, see ``event_grow``); returns the new size."""
    pos = size
    while pos > 0:
        parent = (pos - 1) >> 1
        pt = times[parent]
        if time_s < pt or (time_s == pt and seq < seqs[parent]):
            times[pos] = pt
            seqs[pos] = seqs[parent]
            packed[pos] = packed[parent]
            pos = parent
        else:
            break
    times[pos] = time_s
    seqs[pos] = seq
    packed[pos] = payload
    return size + 1


@njit(cache=True)
def event_pop(times: np.ndarray, seqs: np.ndarray, packed: np.ndarray, size: int) -> tuple[float, int, int, int]:
    """Remove the earliest event; returns (time_s, seq, payload, new size)."""
    top_t = times[0]
    top_s = seqs[0]
    top_p = packed[0]
    size -= 1
    if size > 0:
        last_t = times[size]
        last_s = seqs[size]
        last_p = packed[size]
        pos = 0
        while True:
            child = 2 * pos + 1
            if child >= size:
                break
            right = child + 1
            if right < size and (times[right] < times[child]
                                 or (times[right] == times[child] and seqs[right] < seqs[child])):
                child = right
            ct = times[child]
            if ct < last_t or (ct == last_t and seqs[child] < last_s):
                times[pos] = ct
                seqs[pos] = seqs[child]
                packed[pos] = packed[child]
                pos = child
            else:
                break
        times[pos] = last_t
        seqs[pos] = last_s
        packed[pos] = last_p
    return top_t, top_s, top_p, size


@njit(cache=True)
def rank_push(heap: np.ndarray, base: int, size: int, node: int, rank: np.ndarray) -> None:
    """Push ``node`` on the heap at ``heap[base : base + size]`` ordered by ``rank[node]`` (unique)."""
    key = rank[node]
    pos = size
    while pos > 0:
        parent = (pos - 1) >> 1
        other = heap[base + parent]
        if key < rank[other]:
            heap[base + pos] = other
            pos = parent
        else:
            break
    heap[base + pos] = node


@njit(cache=True)
def rank_pop(heap: np.ndarray, base: int, size: int, rank: np.ndarray) -> int:
    """Pop the node of smallest rank from ``heap[base : base + size]`` (size before the pop)."""
    top = heap[base]
    size -= 1
    if size > 0:
        last = heap[base + size]
        key = rank[last]
        pos = 0
        while True:
            child = 2 * pos + 1
            if child >= size:
                break
            right = child + 1
            if right < size and rank[heap[base + right]] < rank[heap[base + child]]:
                child = right
            if rank[heap[base + child]] < key:
                heap[base + pos] = heap[base + child]
                pos = child
            else:
                break
        heap[base + pos] = last
    return top
