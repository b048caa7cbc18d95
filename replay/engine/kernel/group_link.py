"""Weighted water-filling on the seniority link's arrays (``seniority_state``): released groups,
the reference's ``_JoinGroupLink`` (``seniority`` with ``join_window_s > 0``), and its
``_SeniorityLink`` under unequal interfaces (``_rerate_unequal_caps``: each connection its own
group, ``fair`` sharing being weight 1), both capped by each worker's interface.

A connection that joins within the window of the newest group's opening belongs to it;
otherwise it opens a new group and leads it. A connection weighs ``seniority^-k`` (``k`` the
rank of its group among the groups with active connections) times the leader's weight if it
leads; the direction is shared by weighted water-filling under the worker's cap. Every active
connection moves (no resolution cut-off, as in the reference), so a re-rating costs O(active).

The reference sums the weights with ``sum()`` in age order (plain before CPython 3.12,
compensated from it: ``F_COMPENSATED``) and sorts the connections by cap over weight with a
stable sort; here the sort is an insertion sort over the age order, stable too and about linear
since weights mostly fall with age. The ranks' weights are ``seniority ** -k`` computed by
Python (numba's integer powers multiply, which rounds differently). Joining never overtakes,
so no random words are drawn.
"""

from __future__ import annotations

import math

from replay.engine.kernel.jit import per_event
from replay.engine.kernel.seniority_state import (
    F_CAPACITY,
    F_COMPENSATED,
    F_GROUP_OPENED,
    F_JOIN_WINDOW,
    F_LEADER_WEIGHT,
    F_UNEQUAL,
    F_WORKER_CAP,
    I_CONNECTIONS,
    I_MOVING,
    I_NEWEST_GROUP,
    S_BY_AGE,
    S_CAPS,
    S_CONNECTION_RATE,
    S_COUNT,
    S_FLOATS,
    S_GROUP_OF,
    S_INTS,
    S_IS_LEADER,
    S_KEY,
    S_ORDER,
    S_RANK_WEIGHT,
    S_RATES,
    S_SHARE_EPOCH,
    S_WEIGHT,
)


@per_event
def group_join(st: tuple, d: int, now: float, worker: int) -> None:
    """``worker``'s connection joins ``d`` as the youngest: into the newest group, or opening one."""
    lf, li, by_age, group_of, is_leader = st[S_FLOATS], st[S_INTS], st[S_BY_AGE], st[S_GROUP_OF], st[S_IS_LEADER]
    opens = now - lf[d, F_GROUP_OPENED] > lf[d, F_JOIN_WINDOW]
    if opens:
        li[d, I_NEWEST_GROUP] += 1
        lf[d, F_GROUP_OPENED] = now
    group_of[d, worker] = li[d, I_NEWEST_GROUP]
    is_leader[d, worker] = opens
    n = li[d, I_CONNECTIONS]
    by_age[d, n] = worker
    li[d, I_CONNECTIONS] = n + 1


@per_event
def _weigh(st: tuple, d: int) -> float:
    """Each connection's weight (``S_WEIGHT``) and their total as the reference's ``sum()`` gives it."""
    lf, li, by_age, group_of, is_leader = st[S_FLOATS], st[S_INTS], st[S_BY_AGE], st[S_GROUP_OF], st[S_IS_LEADER]
    rank_weight, weight = st[S_RANK_WEIGHT], st[S_WEIGHT]
    compensated = lf[d, F_COMPENSATED] != 0.0
    grouped = lf[d, F_JOIN_WINDOW] > 0.0  # else every connection is its own group, without a leader
    leader = lf[d, F_LEADER_WEIGHT]
    total = 0.0
    c = 0.0
    rank = -1
    group = -1
    for r in range(li[d, I_CONNECTIONS]):
        w = by_age[d, r]
        if not grouped:
            rank = r
        elif group_of[d, w] != group:
            group = group_of[d, w]
            rank += 1
        x = rank_weight[d, rank] * leader if grouped and is_leader[d, w] else rank_weight[d, rank]
        weight[d, w] = x
        if r == 0 or not compensated:
            total += x
        else:  # Neumaier's summation, as CPython's sum() of floats from 3.12
            t = total + x
            if abs(total) >= abs(x):
                c += (total - t) + x
            else:
                c += (x - t) + total
            total = t
    if c != 0.0 and math.isfinite(c):
        total += c
    return total


@per_event
def group_rerate(st: tuple, d: int, epoch: int) -> None:
    """Weighted water-filling: connections in order of cap over weight take their cap while it is
    below their share of what is left; the rest share what is left by weight."""
    lf, li, rates, count, by_age = st[S_FLOATS], st[S_INTS], st[S_RATES], st[S_COUNT], st[S_BY_AGE]
    connection_rate, share_epoch, weight, order, key = (st[S_CONNECTION_RATE], st[S_SHARE_EPOCH], st[S_WEIGHT],
                                                        st[S_ORDER], st[S_KEY])
    total = _weigh(st, d)
    unequal = lf[d, F_UNEQUAL] != 0.0
    caps = st[S_CAPS]
    cap = lf[d, F_WORKER_CAP]
    n = li[d, I_CONNECTIONS]
    for r in range(n):  # a stable insertion sort by cap over weight
        w = by_age[d, r]
        if unequal:
            cap = caps[d, w]
        k = cap / weight[d, w] if weight[d, w] > 0.0 else math.inf
        key[d, w] = k
        pos = r
        while pos > 0 and key[d, order[d, pos - 1]] > k:
            order[d, pos] = order[d, pos - 1]
            pos -= 1
        order[d, pos] = w
    remaining = lf[d, F_CAPACITY]
    for q in range(n):
        w = order[d, q]
        if unequal:
            cap = caps[d, w]
        share = remaining * weight[d, w] / total if total > 0.0 else 0.0
        if cap < share:
            connection_rate[d, w] = cap
            share_epoch[d, w] = epoch
            rates[d, w] = cap / count[d, w]
            remaining -= cap
            total -= weight[d, w]
            continue
        for j in range(q, n):
            v = order[d, j]
            rate = remaining * weight[d, v] / total if total > 0.0 else 0.0
            connection_rate[d, v] = rate
            share_epoch[d, v] = epoch
            rates[d, v] = rate / count[d, v]
        break
    li[d, I_MOVING] = n
