"""Timeline recording in the kernel: the reference's ``TimelineRecord`` of a run's first steps.

The reference appends to three lists while a worker is in its first ``record_steps`` steps:
each op completed (worker, node, start, end, step), each transfer arrived (worker, node,
requested, admitted to the link, left the link, arrived, step) and each step ended (worker,
step, start, end, outcome). Here they are rows of preallocated arrays, filled in the order the
reference appends (the kernel's events come in its order), and ``timeline_rows`` turns them
back into the lists. A worker's recorded step completes each node at most once (an interrupted step's
events are skipped before they are recorded), so rows for every worker's recorded steps are
room enough.

Start times are kept per (worker, node) as the reference keeps ``started``, only while
recording (the loop sets them where it starts an op or requests a transfer); the start node is
never set, as in the reference. A transfer is admitted when it is requested under ``fair``,
``fair-per-transfer`` and ``seniority`` without a stream cap (the reference's links admit in
``add``), when a stream is free under a cap (``waiting_admitted``) and when it enters service under ``fifo``
(``fifo_admitted``); the reference's ``admitted_at`` dictionary keeps the latest admission of a
(worker, node), and so does the array.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from replay.engine.kernel.fifo_link import I_BUSY, I_CURRENT_NODE, I_CURRENT_WORKER
from replay.engine.kernel.jit import per_event
from replay.engine.kernel.timeline_rows import C_OPS, C_RECORD_STEPS, C_STEPS, C_TRANSFERS
from replay.engine.kernel.waiting import I_ADMITTED


@njit(cache=True)
def timeline_new(workers: int, n: int, record_steps: int, ops_per_step: int, transfers_per_step: int) -> tuple:
    """Room for ``record_steps`` steps of every worker (one row each when not recording)."""
    steps = workers * record_steps
    ops_rows = max(steps * ops_per_step, 1)
    transfer_rows = max(steps * transfers_per_step, 1)
    counts = np.zeros(4, dtype=np.int64)
    counts[C_RECORD_STEPS] = record_steps
    per_node = workers * n if record_steps > 0 else 1
    return (counts, np.zeros((ops_rows, 3), dtype=np.int64), np.zeros((ops_rows, 2), dtype=np.float64),
            np.zeros((transfer_rows, 3), dtype=np.int64), np.zeros((transfer_rows, 4), dtype=np.float64),
            np.zeros((max(steps, 1), 3), dtype=np.int64), np.zeros((max(steps, 1), 2), dtype=np.float64),
            np.zeros(per_node, dtype=np.float64), np.zeros(per_node, dtype=np.float64))


@per_event
def _row(counts: np.ndarray, which: int, ints: np.ndarray, a: int, b: int, c: int) -> int:
    """Append a row to the table ``which`` counts; writes its three integers, returns its index."""
    r = counts[which]
    counts[which] = r + 1
    ints[r, 0] = a
    ints[r, 1] = b
    ints[r, 2] = c
    return r


@per_event
def record_step(tl: tuple, w: int, step: int, start: float, end: float, outcome: int) -> None:
    """Worker ``w``'s step ``step`` ended, if it is one of the recorded ones."""
    counts = tl[0]
    if step >= counts[C_RECORD_STEPS]:
        return
    r = _row(counts, C_STEPS, tl[5], w, step, outcome)
    tl[6][r, 0] = start
    tl[6][r, 1] = end


@per_event
def record_done(tl: tuple, w: int, i: int, n: int, is_transfer: bool, t: float, delay_s: float, step: int) -> None:
    """Worker ``w``'s node ``i`` completed at ``t`` (a transfer: arrived) in its step ``step``."""
    counts = tl[0]
    if step >= counts[C_RECORD_STEPS]:
        return
    started, admitted = tl[7], tl[8]
    if is_transfer:
        r = _row(counts, C_TRANSFERS, tl[3], w, i, step)
        tr_f = tl[4]
        tr_f[r, 0] = started[w * n + i]
        tr_f[r, 1] = admitted[w * n + i]
        tr_f[r, 2] = t - delay_s
        tr_f[r, 3] = t
    else:
        r = _row(counts, C_OPS, tl[1], w, i, step)
        tl[2][r, 0] = started[w * n + i]
        tl[2][r, 1] = t


@per_event
def fifo_admitted(tl: tuple, fifo: tuple, d: int, was_busy: bool, n_done: int, now: float, n: int) -> None:
    """After a ``fifo`` direction's finished transfers were popped at ``now``: the transfer it put
    into service then, if any (it starts one unless the timer fired early, before its current
    transfer's end), is admitted now."""
    li = fifo[1]
    if li[d, I_BUSY] == 1 and (n_done > 0 or not was_busy):
        tl[8][li[d, I_CURRENT_WORKER] * n + li[d, I_CURRENT_NODE]] = now


@per_event
def waiting_admitted(tl: tuple, wq: tuple, d: int, now: float, n: int) -> None:
    """After a capped direction's finished transfers were popped at ``now``: the waiting
    transfers it admitted then are admitted now."""
    for q in range(wq[0][d, I_ADMITTED]):
        tl[8][wq[8][d, q] * n + wq[9][d, q]] = now
