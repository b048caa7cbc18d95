"""Array binary heaps for the kernel: the event heap, and the queues of ops ready for a busy lane.

The event heap orders ``(time_s, seq)`` as the reference's ``heapq`` of
``(time, seq, code, worker, node)`` tuples does; ``seq`` is unique, so the pop order is the
same whatever the heap's internal layout. Each event's code, worker and node travel packed in
one int64 (``pack_event``). The loop allocates the heap with room for every event that can be
pending at once (one per worker and node that can wait in it, times the slack it gives
interrupted steps' leftovers), so it never grows within a run: an array the loop reassigned
would be reference-counted on every event. Nothing here knows what an event means.
"""

from __future__ import annotations

import numpy as np

from replay.engine.kernel.jit import per_event

# Event codes, as in the reference loop.
EV_DONE = 0  # a node of a worker completes
EV_LINK = 1  # a link direction may have finished transfers (its version is the event's seq)
EV_PS_READY = 2  # a PS op has waited its gap and queues for its device
EV_SYNC = 3  # the sync discipline asked to be woken (an update completes, a cutoff expires)


@per_event
def node_bits(n: int) -> int:
    """Bits that hold a node index below ``n``: events pack worker and node by shifts, not by a
    multiplication that unpacking would have to divide again."""
    bits = 1
    while (1 << bits) < n:
        bits += 1
    return bits


@per_event
def pack_event(code: int, worker: int, node: int, bits: int) -> int:
    """One int64 for an event's code, worker (a direction for link events) and node."""
    return ((worker << bits | node) << 2) | code


@per_event
def before3(a0: float, a1: float, a2: float, b0: float, b1: float, b2: float) -> bool:
    """Whether the key ``(a0, a1, a2)`` comes before ``(b0, b1, b2)``, as tuples compare; the
    links' heaps key by three numbers, the last one unique."""
    if a0 != b0:
        return a0 < b0
    if a1 != b1:
        return a1 < b1
    return a2 < b2


@per_event
def event_push(times: np.ndarray, seqs: np.ndarray, packed: np.ndarray, size: int, time_s: float, seq: int,
               payload: int) -> int:
    """Push one event (the caller allocated room for it); returns the new size."""
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


@per_event
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


@per_event
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


@per_event
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
