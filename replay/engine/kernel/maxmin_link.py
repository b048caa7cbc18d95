"""``fair-per-transfer`` sharing where the workers' interfaces bind, as arrays: the reference's
``_MaxMinLink``, on the seniority link's state (``seniority_state``).

Every transfer is its own flow: the direction is shared max-min fairly among all transfers in
flight, each worker's transfers together capped by its interface. The reference keeps one clock
per worker (service per transfer of that worker) and water-fills on every arrival and
departure: workers are saturated in order of their cap per transfer (equal caps: most transfers
first, ties by the higher worker index, as its reverse sort of ``(count, worker)`` has it;
unequal caps: ``cap / count`` ascending, ties in worker order, its stable sort), each getting
``min(cap / count, remaining / transfers left)`` per transfer. Here the active workers are kept
in ``by_age`` in worker order (the reference's ``_active_workers``), so the seniority link's
advancing, timing and finishing (``seniority_link``) serve unchanged, every active worker
moving; the order of the water-filling is an insertion sort into ``S_ORDER`` (nearly linear:
most workers have the same number of transfers in flight). Every call re-rates in full, as the
reference does: a transfer count enters the rates.
"""

from __future__ import annotations

import numpy as np

from replay.engine.kernel.fair_link import _flow_push
from replay.engine.kernel.jit import per_event
from replay.engine.kernel.seniority_link import _advance, pop_due, seniority_next_time
from replay.engine.kernel.seniority_state import (
    F_CAPACITY,
    F_UNEQUAL,
    F_WORKER_CAP,
    I_ACTIVE,
    I_CONNECTIONS,
    I_MOVING,
    I_SEQ,
    S_BY_AGE,
    S_CAPS,
    S_CLOCKS,
    S_COUNT,
    S_FLOATS,
    S_INTS,
    S_NODE,
    S_ORDER,
    S_RATES,
    S_SEQ,
    S_TAG,
)


@per_event
def maxmin_admit(st: tuple, d: int, worker: int, node: int, bits: float, seq: int) -> None:
    """A transfer joins ``d`` (the reference's ``_admit``), the clocks already advanced to now;
    the re-rating is the caller's."""
    li, count, by_age = st[S_INTS], st[S_COUNT], st[S_BY_AGE]
    if count[d, worker] == 0:  # the worker becomes active: into its place in worker order
        pos = li[d, I_CONNECTIONS]
        while pos > 0 and by_age[d, pos - 1] > worker:
            by_age[d, pos] = by_age[d, pos - 1]
            pos -= 1
        by_age[d, pos] = worker
        li[d, I_CONNECTIONS] += 1
        li[d, I_MOVING] = li[d, I_CONNECTIONS]
    _flow_push(st[S_TAG], st[S_SEQ], st[S_NODE], count, d, worker, st[S_CLOCKS][d, worker] + bits, seq, node)
    li[d, I_ACTIVE] += 1


@per_event
def maxmin_rerate(st: tuple, d: int) -> None:
    """Water-filling per transfer under each worker's interface, in the reference's order."""
    lf, li, rates, count, by_age, order, caps = (st[S_FLOATS], st[S_INTS], st[S_RATES], st[S_COUNT], st[S_BY_AGE],
                                                 st[S_ORDER], st[S_CAPS])
    n = li[d, I_CONNECTIONS]
    unequal = lf[d, F_UNEQUAL] != 0.0
    if unequal:  # cap per transfer ascending, ties in worker order
        for r in range(n):
            w = by_age[d, r]
            key = caps[d, w] / count[d, w]
            pos = r
            while pos > 0 and caps[d, order[d, pos - 1]] / count[d, order[d, pos - 1]] > key:
                order[d, pos] = order[d, pos - 1]
                pos -= 1
            order[d, pos] = w
    else:  # (count, worker) descending: from the highest worker down, later ones go after equal counts
        for r in range(n):
            w = by_age[d, n - 1 - r]
            pos = r
            while pos > 0 and count[d, order[d, pos - 1]] < count[d, w]:
                order[d, pos] = order[d, pos - 1]
                pos -= 1
            order[d, pos] = w
    remaining = lf[d, F_CAPACITY]
    flows_left = li[d, I_ACTIVE]
    cap = lf[d, F_WORKER_CAP]
    for q in range(n):
        w = order[d, q]
        c = count[d, w]
        share = remaining / flows_left
        own = (caps[d, w] if unequal else cap) / c
        rate = own if own < share else share
        rates[d, w] = rate
        remaining -= rate * c
        flows_left -= c
    li[d, I_MOVING] = n


@per_event
def maxmin_add(st: tuple, d: int, now: float, worker: int, node: int, bits: float) -> float:
    """A transfer asks for direction ``d`` (no stream cap); returns the direction's next finish time."""
    li = st[S_INTS]
    _advance(st, d, now)
    li[d, I_SEQ] += 1
    maxmin_admit(st, d, worker, node, bits, li[d, I_SEQ])
    maxmin_rerate(st, d)
    return seniority_next_time(st, d)


@per_event
def maxmin_pop_finished(st: tuple, d: int, now: float, done_worker: np.ndarray, done_node: np.ndarray) -> int:
    """The transfers of ``d`` that finish at ``now``, written to ``done_*`` in the reference's order."""
    n_done, _ = pop_due(st, d, now, done_worker, done_node)
    maxmin_rerate_active(st, d)
    return n_done


@per_event
def maxmin_rerate_active(st: tuple, d: int) -> None:
    """Re-rate if transfers are in flight (after departures, admissions or a new capacity)."""
    if st[S_INTS][d, I_ACTIVE]:
        maxmin_rerate(st, d)


@per_event
def maxmin_set_capacity(st: tuple, d: int, now: float, capacity_bps: float) -> None:
    _advance(st, d, now)
    st[S_FLOATS][d, F_CAPACITY] = capacity_bps
    maxmin_rerate_active(st, d)
