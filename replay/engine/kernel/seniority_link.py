"""``seniority`` sharing as arrays: the reference's ``_SeniorityLink`` with equal interfaces, both directions.

Active connections (one per worker) are kept by age, the heaviest first; the connection at
rank ``r`` of ``m`` gets ``remaining / g(m - r)`` of what the older ones left (``g`` the prefix
sums of the weights ``s^0, s^-1, ...``), capped by the worker's interface, and shares it
equally among its transfers. Only the ``moving`` oldest connections, those with a share, are
advanced, timed and re-rated, as in the reference: O(moving) per call. Where the reference
re-rates them all after a transfer joined or left a connection that stays, only that
connection is re-rated here (``_rerate_one``): the water-filling reads no transfer counts, so
the others would get the very floats they have.

A connection that joins a busy direction overtakes with the link's chance and takes a random
rank. The reference draws both from one ``random.Random`` shared by the two directions
(``random()``, then ``randrange(rank count)``); here they come from that generator's raw 32-bit
words, drawn in Python before the run (``entry``), turned into the same numbers the way
CPython does: ``random()`` from two words (``(a >> 5) * 2^26 + (b >> 6)`` over ``2^53``),
``randrange(n)`` from one word per try (its top ``bit_length(n)`` bits, retried while ``>= n``).
A run that needs more words than it was given says so (``rng[1]``) and is run again with more.

With a join window (released groups) connections join and are re-rated by ``group_link``
instead, on the same arrays; the rest (advancing, timing, finishing) is shared.

Under a stream cap a transfer first waits (``waiting``): ``seniority_arrive`` only advances the
clocks and counts it, ``seniority_admit`` is the reference's ``_admit`` when a stream frees (a
connection joins, overtaking or into a group, when its first transfer is admitted), and
``seniority_rerate`` re-rates every connection after the admissions of one instant.

State is a tuple of arrays whose first index is the direction (DOWNLINK, UPLINK); its layout is
``seniority_state``'s.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from replay.engine.kernel.fair_link import _flow_pop, _flow_push
from replay.engine.kernel.group_link import group_join, group_rerate
from replay.engine.kernel.jit import per_event
from replay.engine.kernel.seniority_state import (
    F_CAPACITY,
    F_COMPENSATED,
    F_GROUP_OPENED,
    F_JOIN_WINDOW,
    F_LEADER_WEIGHT,
    F_OVERTAKE,
    F_SERVED,
    F_T_LAST,
    F_UNEQUAL,
    F_WORKER_CAP,
    I_ACTIVE,
    I_CONNECTIONS,
    I_EPOCH,
    I_MOVING,
    I_NEWEST_GROUP,
    I_SEQ,
    N_FLOAT_FIELDS,
    N_INT_FIELDS,
)

# The random words' cursor: rng[0] the next word, rng[1] set once a draw found none left.
RNG_NEXT = 0
RNG_SHORT = 1


@njit(cache=True)
def seniority_new(workers: int, per_worker: np.ndarray, capacity_bps: np.ndarray, worker_cap_bps: np.ndarray,
                  overtake: np.ndarray, group_weight: np.ndarray, words: np.ndarray, released: np.ndarray,
                  rank_weight: np.ndarray, caps: np.ndarray, unequal: np.ndarray) -> tuple:
    """Both directions idle; ``words`` the raw 32-bit outputs of the reference's link generator;
    ``released[d]`` direction ``d``'s join window (0: no released groups), the leader's weight and
    whether the reference's ``sum()`` is compensated; ``rank_weight[d]`` its weights by group rank
    (by rank without groups; all 1 where ``d`` is ``fair`` sharing of unequal interfaces);
    ``caps[d]`` each worker's interface where ``unequal[d]``."""
    lf = np.zeros((2, N_FLOAT_FIELDS), dtype=np.float64)
    li = np.zeros((2, N_INT_FIELDS), dtype=np.int64)
    for d in range(2):
        lf[d, F_CAPACITY] = capacity_bps[d]
        lf[d, F_WORKER_CAP] = worker_cap_bps[d]
        lf[d, F_OVERTAKE] = overtake[d]
        lf[d, F_JOIN_WINDOW] = released[d, 0]
        lf[d, F_LEADER_WEIGHT] = released[d, 1]
        lf[d, F_COMPENSATED] = released[d, 2]
        lf[d, F_UNEQUAL] = unequal[d]
        lf[d, F_GROUP_OPENED] = -math.inf
        li[d, I_NEWEST_GROUP] = -1
    width = max(per_worker[0], per_worker[1], 1)
    clocks = np.zeros((2, workers), dtype=np.float64)
    rates = np.zeros((2, workers), dtype=np.float64)
    count = np.zeros((2, workers), dtype=np.int64)
    tag = np.zeros((2, workers, width), dtype=np.float64)
    seq = np.zeros((2, workers, width), dtype=np.int64)
    node = np.zeros((2, workers, width), dtype=np.int64)
    by_age = np.zeros((2, workers), dtype=np.int64)
    rng = np.zeros(2, dtype=np.int64)
    connection_rate = np.zeros((2, workers), dtype=np.float64)
    share_epoch = np.full((2, workers), -1, dtype=np.int64)
    # the sorted water-fillings' arrays (released groups, unequal interfaces, per-transfer max-min)
    grouped = workers
    group_of = np.zeros((2, grouped), dtype=np.int64)
    is_leader = np.zeros((2, grouped), dtype=np.bool_)
    weight = np.zeros((2, grouped), dtype=np.float64)
    order = np.zeros((2, grouped), dtype=np.int64)
    key = np.zeros((2, grouped), dtype=np.float64)
    return (lf, li, clocks, rates, count, tag, seq, node, by_age, group_weight, words, rng, connection_rate,
            share_epoch, group_of, is_leader, rank_weight, weight, order, key, caps)


@per_event
def _random(words: np.ndarray, rng: np.ndarray) -> float:
    """CPython's ``random()`` from the next two words (1.0, no overtake, once they run out)."""
    i = rng[RNG_NEXT]
    if i + 2 > words.shape[0]:
        rng[RNG_SHORT] = 1
        return 1.0
    rng[RNG_NEXT] = i + 2
    a = words[i] >> 5
    b = words[i + 1] >> 6
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0)


@per_event
def _randbelow(words: np.ndarray, rng: np.ndarray, n: int) -> int:
    """CPython's ``randrange(n)``: the top ``bit_length(n)`` bits of a word, until one is below ``n``."""
    k = 0
    while (n >> k) > 0:
        k += 1
    while True:
        i = rng[RNG_NEXT]
        if i >= words.shape[0]:
            rng[RNG_SHORT] = 1
            return n - 1
        rng[RNG_NEXT] = i + 1
        r = words[i] >> (32 - k)
        if r < n:
            return r


@per_event
def _advance(st: tuple, d: int, now: float) -> None:
    lf, li, clocks, rates, count, by_age = st[0], st[1], st[2], st[3], st[4], st[8]
    dt = now - lf[d, F_T_LAST]
    if dt > 0 and li[d, I_ACTIVE]:
        total = 0.0
        for r in range(li[d, I_MOVING]):
            w = by_age[d, r]
            clocks[d, w] += dt * rates[d, w]
            total += rates[d, w] * count[d, w]
        lf[d, F_SERVED] += dt * total
    lf[d, F_T_LAST] = now


@per_event
def _rerate(st: tuple, d: int) -> None:
    """Weighted water-filling in age order; connections past the capacity's resolution get no share."""
    lf, li, rates, count, by_age, group_weight = st[0], st[1], st[3], st[4], st[8], st[9]
    connection_rate, share_epoch = st[12], st[13]
    epoch = li[d, I_EPOCH] + 1
    li[d, I_EPOCH] = epoch
    if lf[d, F_JOIN_WINDOW] > 0.0 or lf[d, F_UNEQUAL] != 0.0:
        group_rerate(st, d, epoch)
        return
    capacity = lf[d, F_CAPACITY]
    remaining = capacity
    cap = lf[d, F_WORKER_CAP]
    left = li[d, I_CONNECTIONS]
    moving = 0
    for r in range(li[d, I_CONNECTIONS]):
        w = by_age[d, r]
        if capacity + remaining == capacity:
            break
        share = remaining / group_weight[left]
        rate = share if share < cap else cap
        connection_rate[d, w] = rate
        share_epoch[d, w] = epoch
        rates[d, w] = rate / count[d, w]
        remaining -= rate
        left -= 1
        moving += 1
    li[d, I_MOVING] = moving


@per_event
def _rerate_one(st: tuple, d: int, w: int) -> None:
    """Re-rate after only ``w``'s number of transfers changed: the water-filling gives every
    connection the rate it gave before (it reads no counts), so only ``w``'s per-transfer rate
    moves, and only if it has a share; a full re-rating would compute the same floats."""
    li, rates, count, connection_rate, share_epoch = st[1], st[3], st[4], st[12], st[13]
    if share_epoch[d, w] == li[d, I_EPOCH]:
        rates[d, w] = connection_rate[d, w] / count[d, w]


@per_event
def seniority_next_time(st: tuple, d: int) -> float:
    lf, li, clocks, rates, tag, by_age = st[0], st[1], st[2], st[3], st[5], st[8]
    best = math.inf
    t_last = lf[d, F_T_LAST]
    for r in range(li[d, I_MOVING]):
        w = by_age[d, r]
        rate = rates[d, w]
        if rate > 0.0:  # a connection without a share makes no progress: it finishes at infinity
            t = t_last + (tag[d, w, 0] - clocks[d, w]) / rate
            if t < best:
                best = t
    return best


@per_event
def seniority_admit(st: tuple, d: int, now: float, worker: int, node: int, bits: float, seq: int) -> bool:
    """A transfer joins ``d`` (the reference's ``_admit``), the clocks already advanced to now: a
    worker without transfers there joins the connections (overtaking, or into a released group);
    returns whether it did. The re-rating is the caller's."""
    lf, li, clocks, count, tag, seqs, nodes, by_age, words, rng = (st[0], st[1], st[2], st[4], st[5], st[6], st[7],
                                                                   st[8], st[10], st[11])
    joins = count[d, worker] == 0
    if joins and lf[d, F_JOIN_WINDOW] > 0.0:
        group_join(st, d, now, worker)
    elif joins:
        n = li[d, I_CONNECTIONS]
        overtake = lf[d, F_OVERTAKE]
        if n > 0 and overtake > 0.0 and _random(words, rng) < overtake:
            pos = _randbelow(words, rng, n)  # wins the race for the queue
            for r in range(n, pos, -1):
                by_age[d, r] = by_age[d, r - 1]
            by_age[d, pos] = worker
        else:
            by_age[d, n] = worker
        li[d, I_CONNECTIONS] = n + 1
    _flow_push(tag, seqs, nodes, count, d, worker, clocks[d, worker] + bits, seq, node)
    li[d, I_ACTIVE] += 1
    return joins


@per_event
def seniority_add(st: tuple, d: int, now: float, worker: int, node: int, bits: float) -> float:
    """A transfer asks for direction ``d`` (no stream cap); returns the direction's next finish time."""
    li = st[1]
    _advance(st, d, now)
    li[d, I_SEQ] += 1
    if seniority_admit(st, d, now, worker, node, bits, li[d, I_SEQ]):
        _rerate(st, d)
    else:
        _rerate_one(st, d, worker)
    return seniority_next_time(st, d)


@per_event
def seniority_arrive(st: tuple, d: int, now: float) -> int:
    """A transfer arrives at ``d`` under a stream cap and waits: the clocks advance to now; returns its seq."""
    _advance(st, d, now)
    li = st[1]
    li[d, I_SEQ] += 1
    return li[d, I_SEQ]


@per_event
def seniority_admitted(st: tuple, d: int) -> int:
    """Transfers admitted to ``d`` and not finished: what the stream cap counts."""
    return st[1][d, I_ACTIVE]


@per_event
def seniority_rerate(st: tuple, d: int) -> None:
    """After waiting transfers were admitted at the end of ``pop_finished``: the reference
    re-rates every connection then."""
    if st[1][d, I_ACTIVE]:
        _rerate(st, d)


@per_event
def seniority_pop_finished(st: tuple, d: int, now: float, done_worker: np.ndarray, done_node: np.ndarray) -> int:
    """The transfers of ``d`` that finish at ``now``, written to ``done_*`` in the reference's order."""
    n_done, emptied = pop_due(st, d, now, done_worker, done_node)
    if emptied:
        if st[1][d, I_ACTIVE]:
            _rerate(st, d)
    else:
        for q in range(n_done):
            if q == 0 or done_worker[q] != done_worker[q - 1]:
                _rerate_one(st, d, done_worker[q])
    return n_done


@per_event
def pop_due(st: tuple, d: int, now: float, done_worker: np.ndarray, done_node: np.ndarray) -> tuple:
    """Advance ``d`` to ``now`` and take off the transfers that finish then, connection by connection
    in ``by_age`` order, dropping the connections they empty; returns (how many, whether any emptied).
    The re-rating is the model's."""
    lf, li, clocks, rates, count, tag, seqs, nodes, by_age = (st[0], st[1], st[2], st[3], st[4], st[5], st[6],
                                                              st[7], st[8])
    _advance(st, d, now)
    n_done = 0
    emptied = False
    moving = li[d, I_MOVING]
    for r in range(moving):
        w = by_age[d, r]
        clock = clocks[d, w]
        limit = clock + (1e-9 * abs(clock) + 1e-6)
        while count[d, w] > 0 and tag[d, w, 0] <= limit:
            done_worker[n_done] = w
            done_node[n_done] = _flow_pop(tag, seqs, nodes, count, d, w)
            n_done += 1
            li[d, I_ACTIVE] -= 1
        rate = rates[d, w]
        if count[d, w] > 0 and rate > 0.0 and lf[d, F_T_LAST] + (tag[d, w, 0] - clocks[d, w]) / rate <= now:
            # The clock cannot resolve what is left of this transfer: it is finished.
            done_worker[n_done] = w
            done_node[n_done] = _flow_pop(tag, seqs, nodes, count, d, w)
            n_done += 1
            li[d, I_ACTIVE] -= 1
        if count[d, w] == 0:
            clocks[d, w] = 0.0
            emptied = True
    if emptied:
        # Only connections with a share can have emptied; the rest keep their order untouched.
        kept = 0
        for r in range(li[d, I_CONNECTIONS]):
            w = by_age[d, r]
            if r >= moving or count[d, w] > 0:
                by_age[d, kept] = w
                kept += 1
        li[d, I_CONNECTIONS] = kept
        if kept < moving:
            li[d, I_MOVING] = kept  # the reference's by_age[:moving] of a shorter list
    return n_done, emptied


@per_event
def seniority_set_capacity(st: tuple, d: int, now: float, capacity_bps: float) -> None:
    _advance(st, d, now)
    st[0][d, F_CAPACITY] = capacity_bps
    if st[1][d, I_ACTIVE]:
        _rerate(st, d)


@per_event
def seniority_served_bits(st: tuple, d: int, now: float) -> float:
    _advance(st, d, now)
    return st[0][d, F_SERVED]


@per_event
def seniority_connections(st: tuple, d: int) -> int:
    return st[1][d, I_CONNECTIONS]


@per_event
def seniority_words_short(st: tuple) -> bool:
    """Whether a draw found the random words used up (the run must be repeated with more)."""
    return st[11][RNG_SHORT] != 0
