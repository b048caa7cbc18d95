"""Where a worker's step ends, is interrupted or starts: the books, the window and the discipline.

These are the reference loop's ``settle``, ``snapshot``, ``end_step``, ``interrupt`` and the
part of a step's end (or of a discipline's wake) that interrupts the workers the discipline
named and starts the ones it lets go (``interrupt_requested``, ``release_waiting``,
``start_steps``), over the kernel's arrays and in the reference's order. They run once per step
or less, not per event, so they are compiled with numba's runtime and take the loop's state as
tuples:

- ``acc``: (acct (4, N): computing, waiting for parameters, for the link, for peers; acct_t;
  busy_lanes; params_out; waiting_for_peers);
- ``win``: (ints [warm, have_t0, counted], floats [t0, t1], steps_done, first_end, last_end,
  own_steps, the timeline's record (``timeline``), step_start);
- ``links``: each direction's sharing code and the models' states, as ``links`` takes them;
- ``work``: what an interruption abandons (abort_seq, lane_busy, lane_queued, the PS queues'
  ring, heads, counts, offsets and capacities, in_link, zombies, the transfer nodes);
- ``heap``: the event heap's times, seqs and payloads;
- ``rq``: the request queue (``LinkConfig.request_queue_s``): floats [request queue, upload bits
  admitted, upload capacity alone, growth], each worker's uploads on the link, since when it has
  been uploading, and the time before which its step's PS ops do not start.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from replay.engine.kernel.discipline import (
    I_ABORTS,
    I_APPLIED,
    I_DROPPED,
    I_RECORDING,
    I_UPDATES,
    gates_steps,
    step_start,
)
from replay.engine.kernel.gate import release, wait_at_back
from replay.engine.kernel.heap import EV_DONE, event_push, pack_event
from replay.engine.kernel.jit import per_event
from replay.engine.kernel.links import link_served_bits
from replay.engine.kernel.timeline import record_step
from replay.engine.kernel.timeline_rows import OUTCOME_ABORTED

RQ_QUEUE = 0
RQ_ADMITTED = 1
RQ_CAPACITY = 2
RQ_GROWTH = 3

W_WARM = 0
W_HAVE_T0 = 1
W_COUNTED = 2
W_T0 = 0
W_T1 = 1


@per_event
def settle(acc: tuple, v: int, now: float) -> None:
    """Charge worker ``v``'s time since its last change of state to the state it was in."""
    acct, acct_t, busy_lanes, params_out, waiting = acc
    dt = now - acct_t[v]
    if waiting[v]:
        acct[3, v] += dt
    elif busy_lanes[v]:
        acct[0, v] += dt
    elif params_out[v]:
        acct[1, v] += dt
    else:
        acct[2, v] += dt
    acct_t[v] = now


@njit(cache=True)
def snapshot(acc: tuple, now: float, links: tuple, ps_busy_s: float, ds: tuple, books: np.ndarray,
             accounts: np.ndarray) -> None:
    """Charge every worker up to ``now`` and copy the books (served bits per direction, PS busy
    time, the discipline's updates, gradients applied and dropped; per-worker accounts)."""
    for v in range(acc[1].shape[0]):
        settle(acc, v, now)
    books[0] = link_served_bits(links, np.int64(0), now)  # literals would compile it again
    books[1] = link_served_bits(links, np.int64(1), now)
    books[2] = ps_busy_s
    di = ds[0]
    books[3] = di[I_UPDATES]
    books[4] = di[I_APPLIED]
    books[5] = di[I_DROPPED]
    accounts[:, :] = acc[0]


@njit(cache=True)
def end_step(w: int, t: float, win: tuple, warmup_steps: int, target: int, acc: tuple, links: tuple,
             ps_busy_s: float, ds: tuple, books0: np.ndarray, accounts0: np.ndarray, outcome: int) -> bool:
    """Account worker ``w``'s step that ended at ``t`` with ``outcome`` (``timeline.OUTCOME_*``,
    recorded if it is one of the first steps); True when the measurement window closes. At the
    window's opening the discipline starts counting staleness values."""
    wi, wf, steps_done, first_end, last_end, own_steps = win[0], win[1], win[2], win[3], win[4], win[5]
    record_step(win[6], w, steps_done[w], win[7][w], t, outcome)
    steps_done[w] += 1
    if not wi[W_HAVE_T0]:
        if steps_done[w] == warmup_steps:
            wi[W_WARM] += 1
            if wi[W_WARM] == steps_done.shape[0]:
                wf[W_T0] = t
                wi[W_HAVE_T0] = 1
                ds[0][I_RECORDING] = 1
                snapshot(acc, t, links, ps_busy_s, ds, books0, accounts0)
    elif t > wf[W_T0]:
        wi[W_COUNTED] += 1
        if first_end[w] < 0.0:
            first_end[w] = t
        else:
            own_steps[w] += 1
        last_end[w] = t
        if wi[W_COUNTED] >= target:
            wf[W_T1] = t
            return True
    return False


@njit(cache=True)
def interrupt(v: int, t: float, seq: int, acc: tuple, work: tuple, n: int, n_lanes: int, nb: int) -> None:
    """Abandon worker ``v``'s step: events pushed before now are skipped (but a PS op in service
    still frees its device), its queued work dropped, its transfers still on a link counted as
    zombies, whose arrival is skipped."""
    abort_seq, lane_busy, lane_queued, ps_ring, ps_head, ps_count, ps_offset, ps_capacity, in_link, zombies, \
        transfer_nodes = work
    settle(acc, v, t)
    abort_seq[v] = seq
    for li in range(v * n_lanes, (v + 1) * n_lanes):
        lane_busy[li] = False
        lane_queued[li] = 0
    acc[2][v] = 0
    acc[3][v] = 0
    for p in range(ps_head.shape[0]):
        # drop v's entries from the queue, the others keep their order
        base, capacity, head = ps_offset[p], ps_capacity[p], ps_head[p]
        kept = 0
        for q in range(ps_count[p]):
            slot = head + q
            if slot >= capacity:
                slot -= capacity
            entry = ps_ring[base + slot]
            if entry >> nb != v:
                keep = head + kept
                if keep >= capacity:
                    keep -= capacity
                ps_ring[base + keep] = entry
                kept += 1
        ps_count[p] = kept
    vb = v * n
    for q in range(transfer_nodes.shape[0]):
        i = transfer_nodes[q]
        if in_link[vb + i]:
            in_link[vb + i] = False
            zombies[vb + i] += 1


@njit(cache=True)
def request_wait_s(rq: tuple, links: tuple, now: float) -> float:
    """How long a step starting at ``now`` waits behind the upload backlog, as the reference's
    ``request_wait_s`` computes it (``replay.engine.loop``)."""
    rq_f, uploads_on_link, uploading_since = rq[0], rq[1], rq[2]
    left = rq_f[RQ_ADMITTED] - link_served_bits(links, np.int64(1), now)
    if left <= 0.0:
        return 0.0
    grown = 0.0
    for v in range(uploads_on_link.shape[0]):
        if uploads_on_link[v]:
            grown += (now - uploading_since[v]) * rq_f[RQ_GROWTH]
    return min(rq_f[RQ_QUEUE], left / rq_f[RQ_CAPACITY], grown)


@njit(cache=True)
def resume(first: int, t: float, hn: int, seq: int, n_redraw: int, ds: tuple, gate: tuple, starts: np.ndarray,
           redraw: np.ndarray, per_worker: bool, win: tuple, warmup_steps: int, target: int, acc: tuple, links: tuple,
           ps_busy_s: float, books0: np.ndarray, accounts0: np.ndarray, work: tuple, heap: tuple,
           pending: np.ndarray, indegree: np.ndarray, step_start_s: np.ndarray, n_downloads: int, start_node: int,
           n_lanes: int, nb: int, rq: tuple) -> tuple:
    """After ``first`` ended a step (-1: after a wake): interrupt the workers the discipline named,
    each ending its step now; then start ``first`` and them (asynchronous disciplines), or hold
    them back and start those the discipline lets go. Returns (heap size, seq, workers whose
    durations are to be drawn, whether the window closed)."""
    di, victims = ds[0], ds[9]
    acct, acct_t, waiting = acc[0], acc[1], acc[4]
    n = indegree.shape[0]
    n_victims = di[I_ABORTS]
    di[I_ABORTS] = 0
    for q in range(n_victims):
        v = victims[q]
        interrupt(v, t, seq, acc, work, n, n_lanes, nb)
        if end_step(v, t, win, warmup_steps, target, acc, links, ps_busy_s, ds, books0, accounts0,
                    np.int64(OUTCOME_ABORTED)):
            return hn, seq, n_redraw, True
    count = 0
    if not gates_steps(ds):
        if first >= 0:
            starts[0] = first
            count = 1
        for q in range(n_victims):
            starts[count] = victims[q]
            count += 1
    else:
        # The discipline may hold these workers back; ending a step may release others.
        if first >= 0:
            waiting[first] = True
        for q in range(n_victims):
            waiting[victims[q]] = True
            wait_at_back(gate, victims[q])
        count = release(gate, ds, first, starts)
        for q in range(count):
            v = starts[q]
            waiting[v] = False
            acct[3, v] += t - acct_t[v]
            acct_t[v] = t
    ht, hs, hp = heap
    params_out = acc[3]
    for q in range(count):
        v = starts[q]
        pending[v * n:(v + 1) * n] = indegree
        step_start_s[v] = t
        if rq[0][RQ_QUEUE] > 0.0:
            rq[3][v] = t + request_wait_s(rq, links, t)
        if per_worker:
            redraw[n_redraw] = v  # drawn (and scaled) once the event is done (event_loop says why)
            n_redraw += 1
        params_out[v] = n_downloads
        step_start(ds, v, t)
        hn = event_push(ht, hs, hp, hn, t, seq, pack_event(EV_DONE, v, start_node, nb))
        seq += 1
    return hn, seq, n_redraw, False
