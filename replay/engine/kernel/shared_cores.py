"""Worker compute sharing one machine's cores, as arrays: the reference's ``SharedCores``.

A local validation runs every worker on one machine, so their compute ops and the PS's share its
few cores (``replay.engine.cores``: processor sharing, an op at most one core, one virtual clock).
This is that processor for the compiled loop, operation for operation, so an op ends at the
reference's float. The running ops sit in a heap keyed ``(finish tag, seq)``, as the reference's
``heapq`` of ``(tag, seq, worker, node)`` orders them; each carries the ``EV_DONE`` event it
becomes when it ends. The loop keeps the processor's one live timer beside its event heap, as it
keeps each link direction's (the reference's superseded timers are skipped when they come up).

A cores count of 0 is none: the loop then holds each op for its own time, as without
``--shared-cores``, and never asks the cores.

State (``cores_new``): float [virtual clock, when it last advanced, the live timer's time],
int [ops running, the last seq, cores, the timer's seq, whether it is armed], then the heap's
tags, seqs and payloads, and room for the ops one timer ends.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from replay.engine.kernel.heap import event_pop, event_push
from replay.engine.kernel.jit import per_event

CF_CLOCK = 0
CF_T_LAST = 1
CF_TIMER = 2
CI_RUNNING = 0
CI_SEQ = 1
CI_CORES = 2
CI_TIMER_SEQ = 3
CI_ARMED = 4


@njit(cache=True)
def cores_new(cores: int, room: int) -> tuple:
    """``cores`` shared cores (0: none) for at most ``room`` ops running at once."""
    cf = np.zeros(3, dtype=np.float64)
    cf[CF_TIMER] = math.inf
    ci = np.zeros(5, dtype=np.int64)
    ci[CI_CORES] = cores
    ci[CI_TIMER_SEQ] = -1
    size = max(room, 1)
    return (cf, ci, np.empty(size, dtype=np.float64), np.empty(size, dtype=np.int64),
            np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64))


@per_event
def _speed(ci: np.ndarray) -> float:
    """Each running op's speed, in seconds of work per second."""
    running = ci[CI_RUNNING]
    return 1.0 if running <= ci[CI_CORES] else ci[CI_CORES] / running


@per_event
def _advance(cf: np.ndarray, ci: np.ndarray, now: float) -> None:
    if ci[CI_RUNNING]:
        cf[CF_CLOCK] += (now - cf[CF_T_LAST]) * _speed(ci)
    cf[CF_T_LAST] = now


@per_event
def cores_next_time(cores: tuple) -> float:
    """When the op closest to done ends, if nothing starts before then."""
    cf, ci, tags = cores[0], cores[1], cores[2]
    if ci[CI_RUNNING] == 0:
        return math.inf
    return cf[CF_T_LAST] + (tags[0] - cf[CF_CLOCK]) / _speed(ci)


@per_event
def cores_pop_finished(cores: tuple, now: float) -> int:
    """The ops that have ended by ``now`` leave the cores; their events are the first entries of
    ``cores[5]``, and their count is returned."""
    cf, ci, tags, seqs, packed, done = cores
    _advance(cf, ci, now)
    clock = cf[CF_CLOCK]
    limit = clock + 1e-12 * max(1.0, abs(clock))
    count = 0
    while ci[CI_RUNNING] and tags[0] <= limit:
        _, _, payload, running = event_pop(tags, seqs, packed, ci[CI_RUNNING])
        ci[CI_RUNNING] = running
        done[count] = payload
        count += 1
    if count == 0 and ci[CI_RUNNING] and cores_next_time(cores) <= now:
        # the clock cannot resolve what is left of this op: it is finished
        _, _, payload, running = event_pop(tags, seqs, packed, ci[CI_RUNNING])
        ci[CI_RUNNING] = running
        done[count] = payload
        count += 1
    if ci[CI_RUNNING] == 0:
        cf[CF_CLOCK] = 0.0
    return count


@per_event
def cores_start(cores: tuple, t: float, payload: int, work_s: float, seq: int) -> None:
    """An op of ``work_s`` seconds of work starts on the cores at ``t``; ``payload`` is the event
    it becomes when it ends. Arms their timer anew with ``seq``, as the reference pushes its timer
    (the caller takes the seq)."""
    cf, ci, tags, seqs, packed = cores[0], cores[1], cores[2], cores[3], cores[4]
    _advance(cf, ci, t)
    ci[CI_SEQ] += 1
    ci[CI_RUNNING] = event_push(tags, seqs, packed, ci[CI_RUNNING], cf[CF_CLOCK] + work_s, ci[CI_SEQ], payload)
    cf[CF_TIMER] = cores_next_time(cores)
    ci[CI_TIMER_SEQ] = seq
    ci[CI_ARMED] = 1
