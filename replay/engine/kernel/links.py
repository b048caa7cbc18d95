"""The link calls of the event loop, dispatched on the sharing model's integer code.

The reference loop calls methods of a link object; the kernel holds one state tuple per model
and branches on ``sharing`` (``support.SHARING_FAIR``, ``SHARING_FIFO`` or ``SHARING_SENIORITY``) here, so a new model
is a new module of array functions and one more branch in each call below, never a branch in
the loop itself.
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
def link_add(sharing: int, fair: tuple, fifo: tuple, sen: tuple, d: int, now: float, step_start_s: float, rank: float,
             worker: int, node: int, bits: float) -> float:
    """A transfer asks for direction ``d``; returns its next finish time. The order key
    (``step_start_s``, ``rank``) only matters where the model chooses among waiting transfers."""
    if sharing == SHARING_FAIR:
        return fair_add(fair, d, now, worker, node, bits)
    if sharing == SHARING_SENIORITY:
        return seniority_add(sen, d, now, worker, node, bits)
    return fifo_add(fifo, d, now, step_start_s, rank, worker, node, bits)


@per_event
def link_next_time(sharing: int, fair: tuple, fifo: tuple, sen: tuple, d: int) -> float:
    if sharing == SHARING_FAIR:
        return fair_next_time(fair, d)
    if sharing == SHARING_SENIORITY:
        return seniority_next_time(sen, d)
    return fifo_next_time(fifo, d)


@per_event
def link_pop_finished(sharing: int, fair: tuple, fifo: tuple, sen: tuple, d: int, now: float, done_worker: np.ndarray,
                      done_node: np.ndarray) -> int:
    if sharing == SHARING_FAIR:
        return fair_pop_finished(fair, d, now, done_worker, done_node)
    if sharing == SHARING_SENIORITY:
        return seniority_pop_finished(sen, d, now, done_worker, done_node)
    return fifo_pop_finished(fifo, d, now, done_worker, done_node)


@per_event
def link_set_capacity(sharing: int, fair: tuple, fifo: tuple, sen: tuple, d: int, now: float,
                      capacity_bps: float) -> None:
    if sharing == SHARING_FAIR:
        fair_set_capacity(fair, d, now, capacity_bps)
    elif sharing == SHARING_SENIORITY:
        seniority_set_capacity(sen, d, now, capacity_bps)
    else:
        fifo_set_capacity(fifo, d, now, capacity_bps)


@per_event
def link_served_bits(sharing: int, fair: tuple, fifo: tuple, sen: tuple, d: int, now: float) -> float:
    if sharing == SHARING_FAIR:
        return fair_served_bits(fair, d, now)
    if sharing == SHARING_SENIORITY:
        return seniority_served_bits(sen, d, now)
    return fifo_served_bits(fifo, d, now)


@per_event
def link_connections(sharing: int, fair: tuple, fifo: tuple, sen: tuple, d: int) -> int:
    if sharing == SHARING_FAIR:
        return fair_connections(fair, d)
    if sharing == SHARING_SENIORITY:
        return seniority_connections(sen, d)
    return fifo_connections(fifo, d)
