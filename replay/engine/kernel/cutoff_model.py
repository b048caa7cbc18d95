"""The dynamic cutoff's run-time model in the kernel: native observations, NumPy decisions.

The reference's ``RunTimeModel`` (``replay/sync/runtime_model.py``) keeps each worker's level
(its last log run-time, or a censored estimate), whether that level was observed exactly, and
the last ``PAIRS_KEPT`` pairs of consecutive run-times. Here they are arrays: the pairs a ring
(``mi`` holds its head and count) read oldest first, as the reference's deque is.

An uncensored observation, one per gradient that arrives, is native: a log and at most one
pair appended, the reference's arithmetic. The two calls made at most once per round run the
reference's own NumPy functions in numba's object mode (``objmode``): the censored estimates of
the workers a round cut (at its close, all of them in one call) and the cutoff of a round (at
its opening), which draws scenarios of every worker's next run-time and picks the best of 64
candidates. Both sort the pairs with ``np.argsort``, whose order among equal run-times is
NumPy's own, and the decision draws with ``Generator.integers`` over a (scenarios, workers)
shape and takes ``np.quantile`` and ``np.unique``; a native copy would have to reproduce each of
them bit for bit to give the reference's cutoffs. Called, they cost about 0.6 ms per decision
(32 workers, 2,048 pairs kept) against a round's tens of thousands of events, and most rounds
take none (the model not ready yet, the rounds that wait for everyone): on inception's graph at
32 workers the dynamic cutoff replays at 6.0 M ops/s, the static one at 6.6 M. The generator is
the reference's (``np.random.default_rng([seed, 0xC07])``), made by ``entry`` and passed
through the kernel. The first decision in a process also loads the object-mode code (about
0.1 s).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, objmode

from replay.engine.kernel.jit import per_event
from replay.sync.runtime_model import (
    FALLBACK_EXCESS,
    MIN_PAIRS,
    PAIRS_KEPT,
    best_cutoff,
    neighbour_changes,
    sample_run_times,
)

M_HEAD = 0
M_COUNT = 1


@njit(cache=True)
def model_new(workers: int) -> tuple:
    """No level known, no pair seen; ``workers`` 0 for a run without the model (no room kept)."""
    mi = np.zeros(2, dtype=np.int64)
    level = np.full(workers, np.nan)
    level_exact = np.zeros(workers, dtype=np.bool_)
    pairs = np.zeros((PAIRS_KEPT if workers else 0, 2), dtype=np.float64)
    return mi, level, level_exact, pairs


@per_event
def model_observe(model: tuple, w: int, seconds: float) -> None:
    """Worker ``w``'s gradient arrived ``seconds`` after its step started (``observe``, uncensored)."""
    mi, level, level_exact, pairs = model
    y = math.log(max(seconds, 1e-12))
    x = level[w]
    if not math.isnan(x) and level_exact[w]:
        count = mi[M_COUNT]
        if count < PAIRS_KEPT:  # the head stays at 0 until the ring is full
            slot = count
            mi[M_COUNT] = count + 1
        else:  # full: the oldest pair gives way, as in a deque with maxlen
            slot = mi[M_HEAD]
            mi[M_HEAD] = slot + 1 if slot + 1 < PAIRS_KEPT else 0
        pairs[slot, 0] = x
        pairs[slot, 1] = y - x
    level[w] = y
    level_exact[w] = True


@per_event
def model_ready(model: tuple) -> bool:
    """Enough pairs, and a level for every worker (``RunTimeModel.ready``)."""
    mi, level = model[0], model[1]
    if mi[M_COUNT] < MIN_PAIRS:
        return False
    for w in range(level.shape[0]):
        if math.isnan(level[w]):
            return False
    return True


@njit(cache=True)
def model_censor(model: tuple, workers: np.ndarray, step_start_s: np.ndarray, now: float) -> None:
    """The workers a round cut at ``now`` are known only to need more than their time so far."""
    mi, level, level_exact, pairs = model
    head = mi[M_HEAD]
    count = mi[M_COUNT]
    with objmode(levels="float64[:]"):
        levels = censored_levels(pairs, head, count, level, workers, step_start_s, now)
    for q in range(workers.shape[0]):
        level[workers[q]] = levels[q]
        level_exact[workers[q]] = False


@njit(cache=True)
def model_decision(model: tuple, rng: np.random.Generator, scenarios: int, update_s: float) -> float:
    """This round's cutoff, in seconds after its opening, from ``scenarios`` draws of the next run-times."""
    mi, level, pairs = model[0], model[1], model[3]
    head = mi[M_HEAD]
    count = mi[M_COUNT]
    with objmode(cutoff="float64"):
        cutoff = decided_cutoff(pairs, head, count, level, rng, scenarios, update_s)
    return cutoff


# -- in Python, called from object mode ---------------------------------------------------------------------------

def pairs_table(pairs: np.ndarray, head: int, count: int) -> np.ndarray:
    """The ring's pairs oldest first: ``np.asarray`` of the reference's deque."""
    if count < pairs.shape[0]:
        return pairs[:count]  # not yet full: the head is still at 0
    return np.concatenate((pairs[head:], pairs[:head]))


def censored_levels(pairs: np.ndarray, head: int, count: int, level: np.ndarray, workers: np.ndarray,
                    step_start_s: np.ndarray, now: float) -> np.ndarray:
    """The new levels of ``workers``, cut at ``now``: ``RunTimeModel.observe`` censored for each in
    turn. The neighbours of all their levels are found in one call (one sort of the pairs instead
    of one per worker); each level's window slides on its own, so its neighbours are those a
    call for it alone finds."""
    bounds = [math.log(max(now - float(step_start_s[w]), 1e-12)) for w in workers.tolist()]
    levels = [float(level[w]) for w in workers.tolist()]
    out = np.array([bound + FALLBACK_EXCESS for bound in bounds])
    known = [q for q, x in enumerate(levels) if not math.isnan(x)]
    if count and known:
        changes = neighbour_changes(pairs_table(pairs, head, count), np.array([levels[q] for q in known]))
        for row, q in enumerate(known):
            outcomes = levels[q] + changes[row]
            above = outcomes[outcomes > bounds[q]]
            if above.size:
                out[q] = float(above.mean())
    return out


def decided_cutoff(pairs: np.ndarray, head: int, count: int, level: np.ndarray, rng: np.random.Generator,
                   scenarios: int, update_s: float) -> float:
    """``best_cutoff`` of the model's scenarios, drawn from the reference's generator."""
    table = pairs_table(pairs, head, count)
    return best_cutoff(sample_run_times(table, np.array(level), rng, scenarios), update_s)
