"""The link calls of the event loop, dispatched on each direction's sharing code.

The reference loop calls methods of a link object, one per direction, and a sharing model may
give the two directions different links (``seniority`` with fair downloads; ``fair`` sharing of
worker interfaces that differ in one direction only). The kernel holds one state tuple per
model, both directions in each, and ``links`` is ``(codes, fair, fifo, sen, waiting, processor)``:
``codes[d]`` (``support.SHARING_*``) says which model serves direction ``d``. ``fair-per-transfer``
is two models, as in the reference: processor sharing (``processor_link``) where the workers'
interfaces do not bind, per-transfer max-min (``maxmin_link``, on the seniority state) where
they do. A new model is a new module of array functions and one more branch in the calls below.

The loop's hottest calls have two dispatchers: ``link_add``, ``link_next_time`` and
``link_pop_finished`` for ``fair``, ``fifo`` and ``seniority``, ``transfer_add``,
``transfer_next_time`` and ``transfer_pop_finished`` for ``fair-per-transfer``'s two models; the
loop picks one family for the run. One dispatcher of all five models was too large for LLVM to
inline into the loop, and a call not inlined passes every model's state arrays, each with its
reference count taken and dropped (``jit``): every model lost about 30% of its speed. The calls
made less often (``link_set_capacity``, ``link_served_bits``, ``link_connections``) dispatch all
five.

``waiting`` is the stream caps' state (``waiting``). Where a direction has a cap the loop calls
``link_wait`` instead of ``link_add`` (the transfer waits there; the model only advances its
clocks and counts it) and ``link_admit`` after ``link_pop_finished`` (waiting transfers are
admitted in policy order while fewer than the cap are in flight, then the model re-rates, as
the reference's links do at the end of ``pop_finished``); the direction's next time is also
when it admits (``admit_at``). Kept out of ``link_add`` and ``link_pop_finished``, the caps
cost the uncapped loop nothing: folded into them, the larger dispatchers made every model's
replay 20% slower.
"""

from __future__ import annotations

import math

import numpy as np

from replay.engine.kernel.fair_link import (
    fair_add,
    fair_admit,
    fair_admitted,
    fair_arrive,
    fair_connections,
    fair_next_time,
    fair_pop_finished,
    fair_rerate,
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
from replay.engine.kernel.maxmin_link import (
    maxmin_add,
    maxmin_admit,
    maxmin_pop_finished,
    maxmin_rerate_active,
    maxmin_set_capacity,
)
from replay.engine.kernel.processor_link import (
    processor_add,
    processor_admit,
    processor_admitted,
    processor_arrive,
    processor_connections,
    processor_next_time,
    processor_pop_finished,
    processor_served_bits,
    processor_set_capacity,
)
from replay.engine.kernel.seniority_link import (
    seniority_add,
    seniority_admit,
    seniority_admitted,
    seniority_arrive,
    seniority_connections,
    seniority_next_time,
    seniority_pop_finished,
    seniority_rerate,
    seniority_served_bits,
    seniority_set_capacity,
)
from replay.engine.kernel.support import (
    SHARING_FAIR,
    SHARING_FIFO,
    SHARING_MAXMIN,
    SHARING_PROCESSOR,
    SHARING_SENIORITY,
)
from replay.engine.kernel.waiting import F_ADMIT_AT, I_ADMITTED, I_MAX_STREAMS, I_WAITING, waiting_pop, waiting_push


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
        t = fair_next_time(links[1], d)
    elif code == SHARING_SENIORITY:
        t = seniority_next_time(links[3], d)
    else:
        return fifo_next_time(links[2], d)
    admit_at = links[4][1][d, F_ADMIT_AT]
    return admit_at if admit_at < t else t


@per_event
def link_pop_finished(links: tuple, d: int, now: float, done_worker: np.ndarray, done_node: np.ndarray) -> int:
    code = links[0][d]
    if code == SHARING_FAIR:
        return fair_pop_finished(links[1], d, now, done_worker, done_node)
    if code == SHARING_SENIORITY:
        return seniority_pop_finished(links[3], d, now, done_worker, done_node)
    return fifo_pop_finished(links[2], d, now, done_worker, done_node)


@per_event
def transfer_add(links: tuple, d: int, now: float, worker: int, node: int, bits: float) -> float:
    """``link_add`` under ``fair-per-transfer``."""
    if links[0][d] == SHARING_PROCESSOR:
        return processor_add(links[5], d, now, worker, node, bits)
    return maxmin_add(links[3], d, now, worker, node, bits)


@per_event
def transfer_next_time(links: tuple, d: int) -> float:
    """``link_next_time`` under ``fair-per-transfer``."""
    if links[0][d] == SHARING_PROCESSOR:
        t = processor_next_time(links[5], d)
    else:
        t = seniority_next_time(links[3], d)
    admit_at = links[4][1][d, F_ADMIT_AT]
    return admit_at if admit_at < t else t


@per_event
def transfer_pop_finished(links: tuple, d: int, now: float, done_worker: np.ndarray, done_node: np.ndarray) -> int:
    """``link_pop_finished`` under ``fair-per-transfer``."""
    if links[0][d] == SHARING_PROCESSOR:
        return processor_pop_finished(links[5], d, now, done_worker, done_node)
    return maxmin_pop_finished(links[3], d, now, done_worker, done_node)


@per_event
def link_wait(links: tuple, d: int, now: float, step_start_s: float, rank: float, worker: int, node: int,
              bits: float) -> float:
    """``link_add`` where ``d`` has a stream cap: the transfer waits to be admitted; returns the
    direction's next time."""
    code = links[0][d]
    if code == SHARING_FAIR:
        seq = fair_arrive(links[1], d, now)
    elif code == SHARING_PROCESSOR:
        seq = processor_arrive(links[5], d, now)
    else:  # the seniority state's: seniority, fair of unequal interfaces, per-transfer max-min
        seq = seniority_arrive(links[3], d, now)
    waiting_push(links[4], d, now, _admitted(links, d), step_start_s, rank, seq, worker, node, bits)
    if code == SHARING_PROCESSOR or code == SHARING_MAXMIN:
        return transfer_next_time(links, d)
    return link_next_time(links, d)


@per_event
def _admitted(links: tuple, d: int) -> int:
    """What the stream cap of ``d`` counts: transfers admitted and not finished."""
    code = links[0][d]
    if code == SHARING_FAIR:
        return fair_admitted(links[1], d)
    if code == SHARING_PROCESSOR:
        return processor_admitted(links[5], d)
    return seniority_admitted(links[3], d)


@per_event
def link_admit(links: tuple, d: int, now: float) -> None:
    """After ``link_pop_finished`` where ``d`` has a stream cap: admit waiting transfers in policy
    order while fewer than the cap are in flight, then re-rate."""
    wq = links[4]
    wi = wq[0]
    wq[1][d, F_ADMIT_AT] = math.inf
    wi[d, I_ADMITTED] = 0
    code = links[0][d]
    cap = wi[d, I_MAX_STREAMS]
    while wi[d, I_WAITING] > 0 and _admitted(links, d) < cap:
        seq, worker, node, bits = waiting_pop(wq, d)
        if code == SHARING_FAIR:
            fair_admit(links[1], d, worker, node, bits, seq)
        elif code == SHARING_SENIORITY:
            seniority_admit(links[3], d, now, worker, node, bits, seq)
        elif code == SHARING_PROCESSOR:
            processor_admit(links[5], d, worker, node, bits, seq)
        else:
            maxmin_admit(links[3], d, worker, node, bits, seq)
    if wi[d, I_ADMITTED] > 0:
        if code == SHARING_FAIR:
            fair_rerate(links[1], d)
        elif code == SHARING_SENIORITY:
            seniority_rerate(links[3], d)
        elif code == SHARING_MAXMIN:
            maxmin_rerate_active(links[3], d)


@per_event
def link_set_capacity(links: tuple, d: int, now: float, capacity_bps: float) -> None:
    code = links[0][d]
    if code == SHARING_FAIR:
        fair_set_capacity(links[1], d, now, capacity_bps)
    elif code == SHARING_SENIORITY:
        seniority_set_capacity(links[3], d, now, capacity_bps)
    elif code == SHARING_FIFO:
        fifo_set_capacity(links[2], d, now, capacity_bps)
    elif code == SHARING_PROCESSOR:
        processor_set_capacity(links[5], d, now, capacity_bps)
    else:
        maxmin_set_capacity(links[3], d, now, capacity_bps)


@per_event
def link_served_bits(links: tuple, d: int, now: float) -> float:
    code = links[0][d]
    if code == SHARING_FAIR:
        return fair_served_bits(links[1], d, now)
    if code == SHARING_FIFO:
        return fifo_served_bits(links[2], d, now)
    if code == SHARING_PROCESSOR:
        return processor_served_bits(links[5], d, now)
    return seniority_served_bits(links[3], d, now)  # seniority and per-transfer max-min


@per_event
def link_connections(links: tuple, d: int) -> int:
    code = links[0][d]
    if code == SHARING_FAIR:
        return fair_connections(links[1], d)
    if code == SHARING_FIFO:
        return fifo_connections(links[2], d)
    if code == SHARING_PROCESSOR:
        return processor_connections(links[5], d)
    return seniority_connections(links[3], d)  # seniority and per-transfer max-min
