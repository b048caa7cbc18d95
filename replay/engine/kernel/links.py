"""The link calls of the event loop, dispatched on each direction's sharing code.

The reference loop calls methods of a link object, one per direction, and a sharing model may
give the two directions different links (``seniority`` with fair downloads; ``fair`` sharing of
worker interfaces that differ in one direction only). The kernel holds one state tuple per
model, both directions in each, and ``links`` is ``(codes, fair, fifo, sen)``: ``codes[d]``
(``support.SHARING_FAIR``, ``SHARING_FIFO`` or ``SHARING_SENIORITY``) says which state serves
direction ``d``. A new model is a new module of array functions and one more branch in each
call below, never a branch in the loop itself.
"""

from __future__ import annotations

import numpy as np

from replay.engine.kernel.fair_link import (
    fair_add,
    fair_connections,
    fair_next_time,
    fair_pop_finished,
    fair_served_bits,
    fair_set_capacity,
)
from replay.engine.kernel.fifo_link import (
    fifo_add,
    fifo_connections,
    fifo_next_time,
    fifo_pop_finished,
    fifo_served_bits,
    fifo_set_capacity,
)
from replay.engine.kernel.jit import per_event
from replay.engine.kernel.seniority_link import (
    seniority_add,
    seniority_connections,
    seniority_next_time,
    seniority_pop_finished,
    seniority_served_bits,
    seniority_set_capacity,
)
from replay.engine.kernel.support import SHARING_FAIR, SHARING_SENIORITY


@per_event
def link_add(links: tuple, d: int, now: float, step_start_s: float, rank: float, worker: int, node: int,
             bits: float) -> float:
    """A transfer asks for direction ``d``; returns its next finish time. The order key
    (``step_start_s``, ``rank``) only matters where the model chooses among waiting transfers."""
    code = links[0][d]
    if code == SHARING_FAIR:
        return fair_add(links[1], d, now, worker, node, bits)
    if code == SHARING_SENIORITY:
        return seniority_add(links[3], d, now, worker, node, bits)
    return fifo_add(links[2], d, now, step_start_s, rank, worker, node, bits)


@per_event
def link_next_time(links: tuple, d: int) -> float:
    code = links[0][d]
    if code == SHARING_FAIR:
        return fair_next_time(links[1], d)
    if code == SHARING_SENIORITY:
        return seniority_next_time(links[3], d)
    return fifo_next_time(links[2], d)


@per_event
def link_pop_finished(links: tuple, d: int, now: float, done_worker: np.ndarray, done_node: np.ndarray) -> int:
    code = links[0][d]
    if code == SHARING_FAIR:
        return fair_pop_finished(links[1], d, now, done_worker, done_node)
    if code == SHARING_SENIORITY:
        return seniority_pop_finished(links[3], d, now, done_worker, done_node)
    return fifo_pop_finished(links[2], d, now, done_worker, done_node)


@per_event
def link_set_capacity(links: tuple, d: int, now: float, capacity_bps: float) -> None:
    code = links[0][d]
    if code == SHARING_FAIR:
        fair_set_capacity(links[1], d, now, capacity_bps)
    elif code == SHARING_SENIORITY:
        seniority_set_capacity(links[3], d, now, capacity_bps)
    else:
        fifo_set_capacity(links[2], d, now, capacity_bps)


@per_event
def link_served_bits(links: tuple, d: int, now: float) -> float:
    code = links[0][d]
    if code == SHARING_FAIR:
        return fair_served_bits(links[1], d, now)
    if code == SHARING_SENIORITY:
        return seniority_served_bits(links[3], d, now)
    return fifo_served_bits(links[2], d, now)


@per_event
def link_connections(links: tuple, d: int) -> int:
    code = links[0][d]
    if code == SHARING_FAIR:
        return fair_connections(links[1], d)
    if code == SHARING_SENIORITY:
        return seniority_connections(links[3], d)
    return fifo_connections(links[2], d)
