"""The synchronization disciplines as arrays: ``replay.sync``'s runs, dispatched on an integer code.

The reference loop calls a ``DisciplineRun`` object (``replay/sync/base.py``): ``on_step_start``,
``on_step_end``, ``may_start``, ``on_wake``, ``first_wake``, the ``aborts`` it fills, its
counters and the staleness of every applied gradient. Here one state tuple holds every
discipline's fields and each call branches on the code (``support.DISCIPLINE_*``), with the
reference's arithmetic in the reference's order, so the loop gets the same answers at the same
moments. Where the reference keeps a structure the kernel cannot, an equivalent one is kept:

- ``ssp``'s count of workers per completed steps is the slowest count and how many workers are
  at it, found again by a scan when the last of them moves on (once per step of the slowest);
- ``sync``'s token queue holds R tokens of step 0, then max(N, R) of every later global step,
  taken first in, first out: the oldest token's step and how many of it were taken say it all;
- ``saps``'s heap of (version read, worker, step id) with stale entries skipped becomes a heap
  of the workers' current steps keyed (version read, worker), a worker's entry taken out when
  its step ends: the stale entries never abort anyone, so the live ones come out in the same
  order;
- staleness values are counted in a histogram, since their summary (mean, percentile, maximum,
  counts) depends on the values, not on their order. A value past its end sets a flag and the
  run is repeated with a longer one.

``epoch`` changes whenever a waiting worker's ``may_start`` answer may change (``ssp``: the
slowest count moved; ``cutoff``: a round closed or opened), so ``gate`` can tell when asking
the worker that just ended its step is enough. The dynamic cutoff's run-time model lives in
``cutoff_model``; the functions that may reach it are compiled with numba's runtime, the others
per event.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from replay.engine.kernel.cutoff_model import model_censor, model_decision, model_new, model_observe, model_ready
from replay.engine.kernel.jit import per_event
from replay.engine.kernel.support import (
    CUTOFF_RULES,
    DISCIPLINE_CUTOFF,
    DISCIPLINE_SAPS,
    DISCIPLINE_SSP,
    DISCIPLINE_SYNC,
)
from replay.sync.cutoff import EXPLORE_EVERY, REALIZED_DECAY, SCENARIOS

CUT_STATIC = CUTOFF_RULES["static"]
CUT_GRADIENTS = CUTOFF_RULES["gradients"]
CUT_DYNAMIC = CUTOFF_RULES["dynamic"]

# Integer fields.
I_CODE = 0
I_WORKERS = 1
I_VERSION = 2  # PS updates applied (sync: the global step)
I_UPDATES = 3
I_APPLIED = 4
I_DROPPED = 5
I_RECORDING = 6  # staleness values are counted from the window's first snapshot on
I_HIST_SHORT = 7  # a staleness value did not fit the histogram
I_ABORTS = 8  # workers listed in ``aborts`` for the loop to interrupt
I_EPOCH = 9
I_BOUND = 10  # ssp, saps: the staleness bound
I_SLOWEST = 11  # ssp: the fewest steps any worker has completed
I_AT_SLOWEST = 12  # ssp: workers that have completed that many
I_R = 13  # sync: gradients per update
I_TOKEN_STEP = 14  # sync: the global step of the oldest token queued
I_TOKEN_TAKEN = 15  # sync: tokens of that step already taken
I_ACCEPTED = 16  # sync: gradients in the accumulators
I_UPDATING = 17
I_ROUND = 18  # cutoff
I_OPEN = 19
I_IN_FLIGHT = 20
I_RULE = 21
I_GRADIENTS = 22
I_HEAP = 23  # saps: workers in the heap
I_ARRIVED = 24  # cutoff: gradients in this round
N_INTS = 25
# Float fields.
F_UPDATE_S = 0  # how long one aggregated update holds the PS
F_OPENED_AT = 1
F_CLOSE_AT = 2
F_REOPEN_AT = 3
F_SECONDS = 4  # a static cutoff
F_CUT_GRADIENTS = 5  # realized gradients and seconds of rounds closed by the cutoff, then by arrivals
F_CUT_SECONDS = 6
F_FULL_GRADIENTS = 7
F_FULL_SECONDS = 8
N_FLOATS = 9

NO_WAKE = -1.0  # what a call returns when the run needs no waking (the reference's None)


@njit(cache=True)
def discipline_new(code: int, workers: int, bound: int, replicas: int, update_s: float, rule: int, seconds: float,
                   gradients: int, histogram_size: int) -> tuple:
    """A fresh run of discipline ``code`` for ``workers`` workers (``new_run`` of the reference):
    (ints, floats, start_version, completed (ssp), local_step (sync), round_of, in_flight,
    step_start (cutoff), heap (saps), aborts, staleness histogram, the run-time model)."""
    di = np.zeros(N_INTS, dtype=np.int64)
    df = np.zeros(N_FLOATS, dtype=np.float64)
    di[I_CODE] = code
    di[I_WORKERS] = workers
    di[I_BOUND] = bound
    di[I_AT_SLOWEST] = workers
    di[I_R] = replicas
    di[I_OPEN] = 1
    di[I_RULE] = rule
    di[I_GRADIENTS] = gradients
    df[F_UPDATE_S] = update_s
    df[F_CLOSE_AT] = math.inf
    df[F_REOPEN_AT] = math.inf
    df[F_SECONDS] = seconds
    start_version = np.zeros(workers, dtype=np.int64)
    completed = np.zeros(workers, dtype=np.int64)
    local_step = np.zeros(workers, dtype=np.int64)
    round_of = np.full(workers, -1, dtype=np.int64)
    in_flight = np.zeros(workers, dtype=np.bool_)
    step_start = np.zeros(workers, dtype=np.float64)
    heap = np.zeros(workers, dtype=np.int64)
    aborts = np.zeros(workers, dtype=np.int64)
    histogram = np.zeros(histogram_size, dtype=np.int64)
    model = model_new(workers if code == DISCIPLINE_CUTOFF and rule == CUT_DYNAMIC else 0)
    return (di, df, start_version, completed, local_step, round_of, in_flight, step_start, heap, aborts, histogram,
            model)


# -- books shared by every discipline ---------------------------------------------------------------------------

@per_event
def _record(di: np.ndarray, histogram: np.ndarray, value: int, count: int) -> None:
    """``count`` applied gradients of staleness ``value``, if the window has opened."""
    if di[I_RECORDING]:
        if value < histogram.shape[0]:
            histogram[value] += count
        else:
            di[I_HIST_SHORT] = 1


@per_event
def _apply_now(ds: tuple, w: int) -> None:
    """One worker's gradient applied as an update of its own (asynchronous SGD)."""
    di, start_version, histogram = ds[0], ds[2], ds[10]
    _record(di, histogram, di[I_VERSION] - start_version[w], 1)
    di[I_VERSION] += 1
    di[I_UPDATES] += 1
    di[I_APPLIED] += 1


# -- saps: the workers' current steps, oldest read first --------------------------------------------------------

@per_event
def _older(start_version: np.ndarray, a: int, b: int) -> bool:
    return start_version[a] < start_version[b] or (start_version[a] == start_version[b] and a < b)


@per_event
def _heap_sift_down(heap: np.ndarray, size: int, pos: int, start_version: np.ndarray) -> None:
    item = heap[pos]
    while True:
        child = 2 * pos + 1
        if child >= size:
            break
        if child + 1 < size and _older(start_version, heap[child + 1], heap[child]):
            child += 1
        if _older(start_version, heap[child], item):
            heap[pos] = heap[child]
            pos = child
        else:
            break
    heap[pos] = item


@per_event
def _heap_sift_up(heap: np.ndarray, pos: int, start_version: np.ndarray) -> None:
    item = heap[pos]
    while pos > 0:
        parent = (pos - 1) >> 1
        if _older(start_version, item, heap[parent]):
            heap[pos] = heap[parent]
            pos = parent
        else:
            break
    heap[pos] = item


@per_event
def _heap_remove(di: np.ndarray, heap: np.ndarray, w: int, start_version: np.ndarray) -> None:
    """Take worker ``w`` out of the heap (its step ended). A linear search: a worker's entry is
    found by value, and removal happens once per step, against a step's hundreds of events."""
    size = di[I_HEAP]
    pos = 0
    while heap[pos] != w:
        pos += 1
    size -= 1
    di[I_HEAP] = size
    if pos < size:
        heap[pos] = heap[size]
        _heap_sift_down(heap, size, pos, start_version)
        _heap_sift_up(heap, pos, start_version)


# -- the calls of the loop ----------------------------------------------------------------------------------------

@per_event
def step_start(ds: tuple, w: int, now: float) -> None:
    """Worker ``w`` starts a step at ``now`` (``on_step_start``)."""
    di, start_version, round_of, in_flight, step_start_s, heap = ds[0], ds[2], ds[5], ds[6], ds[7], ds[8]
    code = di[I_CODE]
    if code == DISCIPLINE_SYNC:
        return  # the step computes on its token's global step
    if code == DISCIPLINE_CUTOFF:
        round_of[w] = di[I_ROUND]
        step_start_s[w] = now
        if not in_flight[w]:
            in_flight[w] = True
            di[I_IN_FLIGHT] += 1
        return
    start_version[w] = di[I_VERSION]
    if code == DISCIPLINE_SAPS:
        size = di[I_HEAP]
        heap[size] = w
        di[I_HEAP] = size + 1
        _heap_sift_up(heap, size, start_version)


@per_event
def _ssp_step_end(ds: tuple, w: int) -> None:
    di, completed = ds[0], ds[3]
    done = completed[w]
    completed[w] = done + 1
    if done == di[I_SLOWEST]:
        di[I_AT_SLOWEST] -= 1
        if di[I_AT_SLOWEST] == 0:
            slowest = completed[0]
            for v in range(completed.shape[0]):
                if completed[v] < slowest:
                    slowest = completed[v]
            at = 0
            for v in range(completed.shape[0]):
                if completed[v] == slowest:
                    at += 1
            di[I_SLOWEST] = slowest
            di[I_AT_SLOWEST] = at
            di[I_EPOCH] += 1


@per_event
def _sync_start_update(ds: tuple, now: float) -> float:
    """The accumulators' gradients (R or more) become one update, applied ``update_s`` from now."""
    di, df, histogram = ds[0], ds[1], ds[10]
    di[I_UPDATING] = 1
    di[I_APPLIED] += di[I_ACCEPTED]
    _record(di, histogram, 0, di[I_ACCEPTED])  # only gradients of the global step are accepted
    di[I_ACCEPTED] = 0
    return now + df[F_UPDATE_S]


@per_event
def _saps_step_end(ds: tuple, w: int) -> None:
    di, start_version, heap, aborts = ds[0], ds[2], ds[8], ds[9]
    _heap_remove(di, heap, w, start_version)
    _apply_now(ds, w)
    limit = di[I_VERSION] - di[I_BOUND]
    while di[I_HEAP] > 0 and start_version[heap[0]] < limit:
        straggler = heap[0]
        size = di[I_HEAP] - 1
        di[I_HEAP] = size
        if size > 0:
            heap[0] = heap[size]
            _heap_sift_down(heap, size, 0, start_version)
        aborts[di[I_ABORTS]] = straggler
        di[I_ABORTS] += 1
        di[I_DROPPED] += 1


@per_event
def step_applied(ds: tuple, w: int) -> bool:
    """The reference's ``last_applied`` for the step ``w`` is about to end (asked before
    ``step_end``): only ``sync`` and ``backup`` drop a step's gradient, one computed on a step the
    accumulators have left behind."""
    di = ds[0]
    return not (di[I_CODE] == DISCIPLINE_SYNC and ds[4][w] < di[I_VERSION])


@per_event
def plain_step_end(ds: tuple, w: int, now: float) -> float:
    """``on_step_end`` of every discipline but the cutoff: when to wake the run, or ``NO_WAKE``."""
    di, local_step = ds[0], ds[4]
    code = di[I_CODE]
    if code == DISCIPLINE_SYNC:
        if local_step[w] < di[I_VERSION]:
            di[I_DROPPED] += 1  # computed on a step the accumulators have left behind
            return NO_WAKE
        di[I_ACCEPTED] += 1
        if di[I_ACCEPTED] >= di[I_R] and not di[I_UPDATING]:
            return _sync_start_update(ds, now)
        return NO_WAKE
    if code == DISCIPLINE_SAPS:
        _saps_step_end(ds, w)
        return NO_WAKE
    _apply_now(ds, w)
    if code == DISCIPLINE_SSP:
        _ssp_step_end(ds, w)
    return NO_WAKE


@per_event
def sync_wake(ds: tuple, now: float) -> float:
    """``on_wake`` of sync and backup: the update is applied and its tokens queued."""
    di = ds[0]
    di[I_UPDATING] = 0
    di[I_UPDATES] += 1
    di[I_VERSION] += 1  # its max(N, R) tokens are now the queue's newest
    if di[I_ACCEPTED] >= di[I_R]:
        return _sync_start_update(ds, now)
    return NO_WAKE


@per_event
def _sync_take_token(di: np.ndarray) -> int:
    """The oldest token's global step, taken from the queue, or -1 when the queue is empty."""
    step = di[I_TOKEN_STEP]
    if step > di[I_VERSION]:
        return -1
    di[I_TOKEN_TAKEN] += 1
    size = di[I_R] if step == 0 else max(di[I_WORKERS], di[I_R])
    if di[I_TOKEN_TAKEN] == size:
        di[I_TOKEN_STEP] = step + 1
        di[I_TOKEN_TAKEN] = 0
    return step


@per_event
def may_start(ds: tuple, w: int) -> bool:
    """``may_start`` of the gating disciplines; under sync a yes takes the worker's token."""
    di, completed, local_step, round_of = ds[0], ds[3], ds[4], ds[5]
    code = di[I_CODE]
    if code == DISCIPLINE_SSP:
        return completed[w] - di[I_SLOWEST] <= di[I_BOUND]
    if code == DISCIPLINE_SYNC:
        token = _sync_take_token(di)
        if token < 0:
            return False
        local_step[w] = token
        return True
    if code == DISCIPLINE_CUTOFF:
        return di[I_OPEN] == 1 and round_of[w] < di[I_ROUND]
    return True


@per_event
def gates_steps(ds: tuple) -> bool:
    """Whether the loop must ask ``may_start`` (the reference's ``gates_steps``)."""
    code = ds[0][I_CODE]
    return code == DISCIPLINE_SSP or code == DISCIPLINE_SYNC or code == DISCIPLINE_CUTOFF


# -- the cutoff's rounds -------------------------------------------------------------------------------------------

@njit(cache=True)
def _round_cutoff(ds: tuple, rng: np.random.Generator) -> float:
    """Seconds after the opening at which this round closes (inf: when enough have arrived)."""
    di, df, model = ds[0], ds[1], ds[11]
    if di[I_RULE] == CUT_STATIC:
        return df[F_SECONDS]
    if di[I_RULE] != CUT_DYNAMIC or not model_ready(model):
        return math.inf
    phase = di[I_ROUND] % EXPLORE_EVERY
    if phase < 2:
        # Two rounds in EXPLORE_EVERY wait for every worker, so the model sees cut workers' run-times.
        return math.inf
    if phase != 2 and _waiting_pays(df):
        return math.inf
    workers = di[I_WORKERS]
    scenarios = max(8, min(SCENARIOS, 65536 // max(1, workers)))
    return model_decision(model, rng, scenarios, df[F_UPDATE_S])


@per_event
def _waiting_pays(df: np.ndarray) -> bool:
    """Whether rounds that waited for everyone have lately applied more gradients per second than
    rounds the model cut (``CutoffRun.waiting_pays``)."""
    cut_gradients, cut_s = df[F_CUT_GRADIENTS], df[F_CUT_SECONDS]
    full_gradients, full_s = df[F_FULL_GRADIENTS], df[F_FULL_SECONDS]
    if cut_s <= 0.0 or full_s <= 0.0:
        return False
    return full_gradients / full_s > cut_gradients / cut_s


@njit(cache=True)
def first_wake(ds: tuple, rng: np.random.Generator) -> float:
    """When the run first needs waking (round 0 of a cutoff opens as the replay starts), or ``NO_WAKE``."""
    di, df = ds[0], ds[1]
    if di[I_CODE] != DISCIPLINE_CUTOFF:
        return NO_WAKE
    first_close = _round_cutoff(ds, rng)
    if first_close < math.inf:
        df[F_CLOSE_AT] = first_close
        return first_close
    return NO_WAKE


@njit(cache=True)
def _close(ds: tuple, now: float) -> float:
    """The PS closes the round: the workers still in flight are listed for interruption, in
    worker order, and the update of the gradients that arrived is applied ``update_s`` on."""
    di, df, in_flight, step_start_s, aborts, model = ds[0], ds[1], ds[6], ds[7], ds[9], ds[11]
    arrived = di[I_ARRIVED]
    if df[F_CLOSE_AT] == now:  # closed by the cutoff, or by everyone (or R) being in
        gradients_field, seconds_field = F_CUT_GRADIENTS, F_CUT_SECONDS
    else:
        gradients_field, seconds_field = F_FULL_GRADIENTS, F_FULL_SECONDS
    df[gradients_field] = REALIZED_DECAY * df[gradients_field] + arrived
    df[seconds_field] = REALIZED_DECAY * df[seconds_field] + now - df[F_OPENED_AT] + df[F_UPDATE_S]
    di[I_OPEN] = 0
    di[I_EPOCH] += 1
    df[F_CLOSE_AT] = math.inf
    for w in range(in_flight.shape[0]):
        if in_flight[w]:
            in_flight[w] = False
            aborts[di[I_ABORTS]] = w
            di[I_ABORTS] += 1
    if di[I_RULE] == CUT_DYNAMIC and di[I_ABORTS] > 0:
        model_censor(model, aborts[:di[I_ABORTS]], step_start_s, now)
    di[I_DROPPED] += di[I_IN_FLIGHT]
    di[I_IN_FLIGHT] = 0
    di[I_APPLIED] += arrived
    df[F_REOPEN_AT] = now + df[F_UPDATE_S] if arrived else now  # nothing to apply
    return df[F_REOPEN_AT]


@njit(cache=True)
def cutoff_step_end(ds: tuple, w: int, now: float) -> float:
    """``on_step_end`` of the cutoff: the gradient is in; the round closes when everyone's (or R) is."""
    di, in_flight, step_start_s, histogram, model = ds[0], ds[6], ds[7], ds[10], ds[11]
    if in_flight[w]:
        in_flight[w] = False
        di[I_IN_FLIGHT] -= 1
    di[I_ARRIVED] += 1
    _record(di, histogram, 0, 1)
    if di[I_RULE] == CUT_DYNAMIC:
        model_observe(model, w, now - step_start_s[w])
    arrived = di[I_ARRIVED]
    if arrived == di[I_WORKERS] or (di[I_RULE] == CUT_GRADIENTS and arrived >= di[I_GRADIENTS]):
        return _close(ds, now)
    return NO_WAKE


@njit(cache=True)
def cutoff_wake(ds: tuple, now: float, rng: np.random.Generator) -> float:
    """``on_wake`` of the cutoff: the cutoff expired, or the update is applied and a round opens."""
    di, df = ds[0], ds[1]
    if now == df[F_CLOSE_AT] and di[I_OPEN]:
        return _close(ds, now)
    if now == df[F_REOPEN_AT] and not di[I_OPEN]:
        df[F_REOPEN_AT] = math.inf
        if di[I_ARRIVED]:
            di[I_UPDATES] += 1
            di[I_VERSION] += 1
        di[I_ROUND] += 1
        di[I_ARRIVED] = 0
        di[I_OPEN] = 1
        di[I_EPOCH] += 1
        df[F_OPENED_AT] = now
        cutoff = _round_cutoff(ds, rng)
        if cutoff < math.inf:
            df[F_CLOSE_AT] = now + cutoff
            return df[F_CLOSE_AT]
    return NO_WAKE


@njit(cache=True)
def step_end(ds: tuple, w: int, now: float) -> float:
    """``on_step_end``: when the run needs waking, or ``NO_WAKE``."""
    if ds[0][I_CODE] == DISCIPLINE_CUTOFF:
        return cutoff_step_end(ds, w, now)
    return plain_step_end(ds, w, now)


@njit(cache=True)
def wake(ds: tuple, now: float, rng: np.random.Generator) -> float:
    """``on_wake``: the next time the run needs waking, or ``NO_WAKE``."""
    code = ds[0][I_CODE]
    if code == DISCIPLINE_CUTOFF:
        return cutoff_wake(ds, now, rng)
    if code == DISCIPLINE_SYNC:
        return sync_wake(ds, now)
    return NO_WAKE
