"""The compiled event loop: N workers repeating one step graph on shared resources under a discipline.

This is ``replay.engine.loop.simulate`` for equal workers and no timeline, under every
synchronization discipline (``discipline``), written over arrays (``layout.KernelGraph``) so
numba compiles it. The semantics are the reference's, in the same order: the same events are
pushed with the same sequence numbers, a worker's accounting is charged at the same moments,
links are advanced at the same instants (the snapshots too, since a fair link's clocks move
when asked for its served bits), and a step's sampled durations are drawn from the same NumPy
generator at the same point of the stream. So a run gives the reference's floats, not an
approximation of them. The reference's module docstring is the specification; comments here
only mark where the array form differs.

Interrupted steps (``cutoff``, ``saps``) leave work behind, as in the reference: events of the
abandoned step stay queued until they come up (a PS op in service still frees its device, every
completion is still counted as an op), and transfers on a link finish crossing it as zombies.
So more can be pending at once than one event per worker and node, and more transfers per
worker than a step has; the loop is sized for ``heap_slack`` and ``link_slack`` times those,
and a run that needs more says so (``STATUS_GROW_HEAP``, ``STATUS_GROW_LINK``; a staleness
value past the histogram: ``STATUS_GROW_STALENESS``) and is run again, larger, from the same
random state (``entry``).

It returns raw books (counts, per-worker accounts at the two snapshots, the staleness
histogram); ``entry`` turns them into a ``RunResult`` with the reference's own arithmetic.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from replay.engine.compiled import KIND_COMPUTE, KIND_DOWNLOAD, KIND_END, KIND_PS, KIND_UPLOAD
from replay.engine.kernel.discipline import (  # discipline_new: entry makes the state with it
    I_HIST_SHORT,
    I_RECORDING,
    NO_WAKE,
    discipline_new,  # noqa: F401
    first_wake,
    step_applied,
    step_end,
    wake,
)
from replay.engine.kernel.discipline import step_start as step_start_discipline
from replay.engine.kernel.fair_link import fair_new
from replay.engine.kernel.fifo_link import I_BUSY as FIFO_BUSY
from replay.engine.kernel.fifo_link import fifo_new
from replay.engine.kernel.gate import gate_new
from replay.engine.kernel.heap import (
    EV_DONE,
    EV_LINK,
    EV_PS_READY,
    EV_SYNC,
    event_pop,
    event_push,
    node_bits,
    pack_event,
    rank_pop,
    rank_push,
)
from replay.engine.kernel.jit import per_event
from replay.engine.kernel.links import (
    link_add,
    link_admit,
    link_connections,
    link_next_time,
    link_pop_finished,
    link_set_capacity,
    link_wait,
    transfer_add,
    transfer_next_time,
    transfer_pop_finished,
)
from replay.engine.kernel.processor_link import processor_new
from replay.engine.kernel.seniority_link import seniority_new, seniority_words_short
from replay.engine.kernel.shared_cores import (
    CF_TIMER,
    CI_ARMED,
    CI_TIMER_SEQ,
    cores_new,
    cores_next_time,
    cores_pop_finished,
    cores_start,
)
from replay.engine.kernel.steps import (
    RQ_ADMITTED,
    RQ_QUEUE,
    W_COUNTED,
    W_HAVE_T0,
    W_T0,
    W_T1,
    end_step,
    resume,
    snapshot,
)
from replay.engine.kernel.support import (
    SHARING_FAIR,
    SHARING_FIFO,
    SHARING_MAXMIN,
    SHARING_PROCESSOR,
    SHARING_SENIORITY,
)
from replay.engine.kernel.timeline import fifo_admitted, record_done, timeline_new, waiting_admitted
from replay.engine.kernel.timeline_rows import OUTCOME_APPLIED, OUTCOME_DROPPED
from replay.engine.kernel.waiting import waiting_new

# How a run ended.
STATUS_WINDOW_CLOSED = 0  # the measured steps completed
STATUS_TIME_OVERFLOW = 1  # an event at infinity: the link is too slow for a step to finish
STATUS_NO_EVENTS = 2  # the heap ran dry before the window closed
# More was pending than the loop was sized for: run again with more room.
STATUS_GROW_HEAP = 3  # events in the heap
STATUS_GROW_LINK = 4  # one worker's transfers on a direction of the link or arriving
STATUS_GROW_STALENESS = 5  # a staleness value past the histogram


@njit(cache=True)
def _wrap(index: int, size: int) -> int:
    """``index % size`` for an index below twice the size, without the division."""
    return index - size if index >= size else index


@njit(cache=True)
def _serves(codes: np.ndarray, code: int) -> bool:
    """Whether the sharing model ``code`` serves either direction."""
    return codes[0] == code or codes[1] == code


@njit(cache=True)
def _arrive(times: np.ndarray, seqs: np.ndarray, packed: np.ndarray, head: int, count: int, time_s: float, seq: int,
            payload: int) -> int:
    """Queue a transfer's arrival on the ring (they come due in the order they are queued: the
    loop's time never goes back and the delay is one constant); returns the new count."""
    slot = _wrap(head + count, times.shape[0])
    times[slot] = time_s
    seqs[slot] = seq
    packed[slot] = payload
    return count + 1


@per_event
def direction_bps(d: int, other_busy: bool, is_contended: bool, contention: float, capacity_alone: np.ndarray,
                  capacity_shared: np.ndarray, reverse: np.ndarray) -> float:
    """A direction's rate as the reference's ``capacity_of`` has it: contending connections pay the
    contention efficiency, a lone transfer under the other direction's load its reverse efficiency."""
    if is_contended:
        return (capacity_shared[d] if other_busy else capacity_alone[d]) * contention
    return capacity_shared[d] * reverse[d] if other_busy else capacity_alone[d]


@per_event
def _pass_ps_device(p: int, t: float, hn: int, seq: int, ht: np.ndarray, hs: np.ndarray, hp: np.ndarray,
                    ps_busy: np.ndarray, ps_ring: np.ndarray, ps_head: np.ndarray, ps_count: np.ndarray,
                    ps_queue_offset: np.ndarray, ps_queue_capacity: np.ndarray, hold: np.ndarray, row_of: int,
                    nb: int, recording: bool, started: np.ndarray, on_cores: bool, cores: tuple) -> tuple:
    """PS device ``p`` finished an op: start the next queued one (its start kept while
    ``recording``; on the shared cores where there are some), or leave it idle; returns (hn, seq)."""
    if ps_count[p]:
        queued = ps_ring[ps_queue_offset[p] + ps_head[p]]
        ps_head[p] += 1
        if ps_head[p] == ps_queue_capacity[p]:
            ps_head[p] = 0
        ps_count[p] -= 1
        w2 = queued >> nb
        j = queued & ((1 << nb) - 1)
        if recording:
            started[w2 * hold.shape[1] + j] = t
        if on_cores:
            cores_start(cores, t, pack_event(EV_DONE, w2, j, nb), hold[w2 * row_of, j], seq)
        else:
            hn = event_push(ht, hs, hp, hn, t + hold[w2 * row_of, j], seq, pack_event(EV_DONE, w2, j, nb))
        seq += 1
    else:
        ps_busy[p] = False
    return hn, seq


@per_event
def _scale_step(hold: np.ndarray, v: int, kind: np.ndarray, factors: np.ndarray, step_index: np.ndarray) -> bool:
    """Multiply worker ``v``'s starting step's compute by its next multiplier, as the reference's
    ``worker_hold`` does; True when its row of multipliers is used up (the run is repeated)."""
    k = step_index[v]
    step_index[v] = k + 1
    if k >= factors.shape[1]:
        return True
    f = factors[v, k]
    if f != 1.0:
        for j in range(kind.shape[0]):
            if kind[j] == KIND_COMPUTE:
                hold[v, j] = hold[v, j] * f
    return False


@njit(cache=True)
def replay(
    kind: np.ndarray, succ_ptr: np.ndarray, succ_idx: np.ndarray, indegree: np.ndarray, lane: np.ndarray,
    lane_rank: np.ndarray, order_rank: np.ndarray, bits: np.ndarray, ps_gap_s: np.ndarray,
    sample_offset: np.ndarray, sample_count: np.ndarray, samples_us: np.ndarray, op_scale_s: np.ndarray,
    held_gap_s: np.ndarray, lane_offset: np.ndarray, lane_width: int, ps_queue_offset: np.ndarray,
    ps_queue_capacity: np.ndarray, transfers_per_worker: np.ndarray, transfer_nodes: np.ndarray, start_node: int,
    n_downloads: int, n_lanes: int, n_ps: int,
    workers: int, warmup_steps: int, target: int, delay_s: float, codes: np.ndarray, ack_coupled: bool,
    loss_coupled: bool, contention: float, capacity_alone: np.ndarray, capacity_shared: np.ndarray,
    reverse: np.ndarray, worker_cap: np.ndarray, caps: np.ndarray, unequal: np.ndarray, begin: np.ndarray,
    hold: np.ndarray, sampled: bool,
    rng: np.random.Generator, overtake: np.ndarray, group_weight: np.ndarray, link_words: np.ndarray,
    released: np.ndarray, rank_weight: np.ndarray, record_steps: int, mean_hold: np.ndarray, factors: np.ndarray,
    scaled: bool, rank_draws: np.ndarray, draws_ranks: bool, max_streams: np.ndarray,
    ds: tuple, may_abort: bool, cutoff_rng: np.random.Generator, heap_slack: int, link_slack: int,
    rq_f: np.ndarray, burst_f: np.ndarray, shared_cores: int,
) -> tuple:
    """One run; ``hold`` is (workers, n) with each worker's first step drawn (sampled) or (1, n)
    of mean hold times; ``rng`` draws every later step's durations when ``sampled``.
    ``codes[d]`` is the sharing code of direction ``d``'s link (``links``). Where the seniority
    state serves, ``overtake`` is each direction's chance, ``group_weight`` the weights' prefix
    sums and ``link_words`` the raw words of the reference's link generator; ``released`` and
    ``rank_weight`` each direction's released groups and weights (``seniority_link.seniority_new``). The first
    ``record_steps`` steps of every worker are recorded (``timeline``). ``worker_cap`` is each
    direction's worker interface (the slowest where ``unequal``), ``caps`` (2, workers) each
    worker's where interfaces differ. When ``scaled`` (unequal
    workers), ``hold`` has a row per worker with its first step scaled, and each later step's
    compute is multiplied by the worker's next ``factors`` (``multipliers``); ``mean_hold`` is
    the (1, n) means a step of mean durations starts from. When ``draws_ranks`` (fifo, random
    order, or a stream cap), each transfer joining the link takes the next of ``rank_draws`` as its
    rank. ``max_streams[d]`` caps the transfers in flight on ``d`` (0: no cap; ``waiting``). ``ds`` is
    the discipline's state (``discipline.discipline_new``), ``may_abort`` whether it interrupts
    steps, ``cutoff_rng`` the dynamic cutoff's generator; ``heap_slack`` and ``link_slack`` are
    how many times the room of uninterrupted steps the heap and each worker's transfers get.
    ``rq_f`` is the request queue's [queue, 0, upload capacity alone, growth] (``steps``; a queue
    of 0: none), whose admitted bits the run counts in place. ``burst_f`` is the token bucket's
    [depth, bits in it each way, since when each way has been idle] in payload bits (a depth of 0:
    none), kept in place as the reference's ``after_burst`` keeps it. ``shared_cores`` cores run the
    compute and PS ops of all workers (``shared_cores``; 0: each op holds only its own lane)."""
    n = kind.shape[0]
    nb = node_bits(n)
    node_mask = (1 << nb) - 1
    inf = math.inf
    per_worker = sampled or scaled  # each worker has its own row of ``hold``
    row_of = 1 if per_worker else 0  # a worker's row of ``hold``
    step_index = np.ones(workers, dtype=np.int64)  # each worker's next multiplier (the first is applied)
    factors_short = False
    next_rank = 0  # the next of ``rank_draws``

    pending = np.empty(workers * n, dtype=np.int64)
    for w in range(workers):
        pending[w * n:(w + 1) * n] = indegree
    lane_busy = np.zeros(workers * n_lanes, dtype=np.bool_)
    lane_queue = np.empty(max(workers * lane_width, 1), dtype=np.int64)
    lane_queued = np.zeros(workers * n_lanes, dtype=np.int64)
    ps_busy = np.zeros(n_ps, dtype=np.bool_)
    ps_ring = np.empty(max(ps_queue_capacity.sum(), 1), dtype=np.int64)  # worker * n + node, first come first served
    ps_head = np.zeros(n_ps, dtype=np.int64)
    ps_count = np.zeros(n_ps, dtype=np.int64)
    step_start = begin.copy()
    steps_done = np.zeros(workers, dtype=np.int64)
    busy_lanes = np.zeros(workers, dtype=np.int64)
    params_out = np.full(workers, n_downloads, dtype=np.int64)
    acct_t = begin.copy()
    # computing, waiting for parameters, waiting for the link, held back by the discipline
    acct = np.zeros((4, workers), dtype=np.float64)
    waiting_for_peers = np.zeros(workers, dtype=np.bool_)
    first_end = np.full(workers, -1.0)
    last_end = np.full(workers, -1.0)
    own_steps = np.zeros(workers, dtype=np.int64)
    # Interrupted steps: events pushed before a worker's interruption (seq below abort_seq) are
    # skipped; its transfers still on a link finish as zombies, skipped by count. ``carried``
    # counts each worker's transfers per direction on the link or arriving, against the room.
    abort_seq = np.zeros(workers, dtype=np.int64)
    in_link = np.zeros(workers * n if may_abort else 1, dtype=np.bool_)
    zombies = np.zeros(workers * n if may_abort else 1, dtype=np.int64)
    carried = np.zeros(2 * workers if may_abort else 1, dtype=np.int64)
    carry_room = transfers_per_worker * link_slack

    widest = max(carry_room[0], carry_room[1], 1)
    fair = fair_new(workers if _serves(codes, SHARING_FAIR) else 1, carry_room, capacity_alone, worker_cap)
    fifo = fifo_new(workers * widest if _serves(codes, SHARING_FIFO) else 1, capacity_alone, worker_cap, caps,
                    unequal)
    # per-transfer max-min works on the seniority state
    sen = seniority_new(workers if _serves(codes, SHARING_SENIORITY) or _serves(codes, SHARING_MAXMIN) else 1,
                        carry_room, capacity_alone,
                        worker_cap, overtake, group_weight, link_words, released, rank_weight, caps, unequal)
    capped = max_streams[0] > 0 or max_streams[1] > 0
    wq = waiting_new(workers * widest if capped else 1, max_streams)
    processor = processor_new(workers, workers * widest if _serves(codes, SHARING_PROCESSOR) else 1, capacity_alone)
    links = (codes, fair, fifo, sen, wq, processor)
    # fair-per-transfer's models have dispatchers of their own (``links``)
    per_transfer = codes[0] >= SHARING_PROCESSOR
    recording = record_steps > 0
    n_transfers = 0
    for j in range(n):
        if kind[j] == KIND_DOWNLOAD or kind[j] == KIND_UPLOAD:
            n_transfers += 1
    tl = timeline_new(workers, n, record_steps, n - n_transfers, n_transfers)
    started, admitted = tl[7], tl[8]
    done_worker = np.empty(workers * widest, dtype=np.int64)
    done_node = np.empty(workers * widest, dtype=np.int64)
    link_sched = np.full(2, inf)
    link_version = np.full(2, -1, dtype=np.int64)
    direction_busy = np.zeros(2, dtype=np.bool_)
    contended = np.zeros(2, dtype=np.bool_)

    # Events come from five sources, merged by (time, seq) as the reference's one heap orders
    # them: the heap (op completions, PS ops done waiting their gap, step starts, the
    # discipline's wakes), at most one per worker and node while no step is interrupted; the
    # transfers' arrivals, due at the direction's delay after their finish, so in the order they
    # were pushed (a ring); each direction's one live timer (``link_sched`` and ``link_version``
    # while ``link_armed``) and the shared cores' (``shared_cores``), which the reference keeps in
    # its heap with their superseded timers, skipped when they come up.
    in_heap = 1  # the start node
    max_successors = 0
    for i in range(n):
        if kind[i] == KIND_COMPUTE or kind[i] == KIND_PS:
            in_heap += 1
        max_successors = max(max_successors, succ_ptr[i + 1] - succ_ptr[i])
    heap_room = (workers * in_heap + 8) * heap_slack  # past this the run is repeated with more room
    # one event pushes at most a successor each, a lane's next op, a PS device's next op, a wake
    # and every worker's step start
    ht = np.empty(heap_room + max_successors + workers + 4, dtype=np.float64)
    hs = np.empty(ht.shape[0], dtype=np.int64)
    hp = np.empty(ht.shape[0], dtype=np.int64)
    heap = (ht, hs, hp)
    hn = 0
    ring_size = workers * (carry_room[0] + carry_room[1]) + 1
    at = np.empty(ring_size, dtype=np.float64)
    as_ = np.empty(ring_size, dtype=np.int64)
    ap = np.empty(ring_size, dtype=np.int64)
    a_head = 0
    a_count = 0
    link_armed = np.zeros(2, dtype=np.bool_)
    # at most every worker's lanes and every PS device run an op at once (no step is interrupted)
    on_cores = shared_cores > 0
    cores = cores_new(shared_cores, workers * n_lanes + n_ps)
    cores_f, cores_i, cores_done = cores[0], cores[1], cores[5]
    seq = 0
    for w in range(workers):
        step_start_discipline(ds, w, begin[w])
        hn = event_push(ht, hs, hp, hn, begin[w], seq, pack_event(EV_DONE, w, start_node, nb))
        seq += 1
    wake_at = first_wake(ds, cutoff_rng)
    if wake_at != NO_WAKE:
        hn = event_push(ht, hs, hp, hn, wake_at, seq, pack_event(EV_SYNC, 0, 0, nb))
        seq += 1

    # the request queue (steps.request_wait_s): a step's PS ops wait behind other workers' uploads
    requests_wait = rq_f[RQ_QUEUE] > 0.0
    uploads_on_link = np.zeros(workers, dtype=np.int64)
    uploading_since = np.zeros(workers)
    ps_not_before = np.zeros(workers)
    rq = (rq_f, uploads_on_link, uploading_since, ps_not_before)
    gate = gate_new(workers)
    starts = np.empty(workers, dtype=np.int64)
    redraw = np.empty(workers, dtype=np.int64)  # workers whose next step's durations are drawn after the event
    n_redraw = np.int64(0)  # np.int64: a literal argument would compile resume once more
    acc = (acct, acct_t, busy_lanes, params_out, waiting_for_peers)
    work = (abort_seq, lane_busy, lane_queued, ps_ring, ps_head, ps_count, ps_queue_offset, ps_queue_capacity,
            in_link, zombies, transfer_nodes)
    win_i = np.zeros(3, dtype=np.int64)
    win_f = np.zeros(2, dtype=np.float64)
    win_f[W_T1] = inf
    win = (win_i, win_f, steps_done, first_end, last_end, own_steps, tl, step_start)
    books0 = np.zeros(6)
    books1 = np.zeros(6)
    accounts0 = np.zeros((4, workers))
    accounts1 = np.zeros((4, workers))
    ps_busy_s = 0.0
    if warmup_steps <= 0:
        win_i[W_HAVE_T0] = 1
        ds[0][I_RECORDING] = 1
        snapshot(acc, 0.0, links, ps_busy_s, ds, books0, accounts0)
    ops = 0
    status = STATUS_NO_EVENTS

    while True:
        if hn > heap_room:
            status = STATUS_GROW_HEAP
            break
        source = -1  # 0 the heap, 1 the arrivals, 2 + d direction d's timer
        t = inf
        sq = 0
        if hn > 0:
            source = 0
            t = ht[0]
            sq = hs[0]
        if a_count > 0:
            ft = at[a_head]
            fs = as_[a_head]
            if source < 0 or ft < t or (ft == t and fs < sq):
                source = 1
                t = ft
                sq = fs
        for d in range(2):
            if link_armed[d]:
                lt = link_sched[d]
                ls = link_version[d]
                if source < 0 or lt < t or (lt == t and ls < sq):
                    source = 2 + d
                    t = lt
                    sq = ls
        if on_cores and cores_i[CI_ARMED]:
            ct = cores_f[CF_TIMER]
            cs = cores_i[CI_TIMER_SEQ]
            if source < 0 or ct < t or (ct == t and cs < sq):
                source = 4
                t = ct
                sq = cs
        if source < 0:
            break
        if source == 0:
            t, sq, payload, hn = event_pop(ht, hs, hp, hn)
        elif source == 4:
            # the shared cores' timer: the ops that have ended complete now, in the order they leave
            cores_i[CI_ARMED] = 0
            for q in range(cores_pop_finished(cores, t)):
                hn = event_push(ht, hs, hp, hn, t, seq, cores_done[q])
                seq += 1
            nt = cores_next_time(cores)
            if nt < inf:
                cores_f[CF_TIMER] = nt
                cores_i[CI_TIMER_SEQ] = seq
                cores_i[CI_ARMED] = 1
                seq += 1
            continue
        elif source == 1:
            payload = ap[a_head]
            a_head += 1
            if a_head == ring_size:
                a_head = 0
            a_count -= 1
        else:
            payload = pack_event(EV_LINK, source - 2, 0, nb)
            link_armed[source - 2] = False
        if t == inf:
            status = STATUS_TIME_OVERFLOW
            break
        code = payload & 3
        rest = payload >> 2
        w = rest >> nb
        i = rest & node_mask
        if code == EV_DONE:
            ops += 1
            k = kind[i]
            base = w * n
            row = w * row_of
            if may_abort:
                if k == KIND_DOWNLOAD or k == KIND_UPLOAD:
                    carried[2 * w + lane[i]] -= 1
                if sq < abort_seq[w] or zombies[base + i]:
                    # work of an interrupted step: a transfer that was on a link is struck off, a
                    # PS op frees its device, the rest is forgotten
                    if zombies[base + i]:
                        zombies[base + i] -= 1
                    elif k == KIND_PS:
                        hn, seq = _pass_ps_device(lane[i], t, hn, seq, ht, hs, hp, ps_busy, ps_ring, ps_head,
                                                  ps_count, ps_queue_offset, ps_queue_capacity, hold, row_of, nb,
                                                  recording, started, on_cores, cores)
                    continue
                if k == KIND_DOWNLOAD or k == KIND_UPLOAD:
                    in_link[base + i] = False
            if k == KIND_PS:
                ps_busy_s += hold[row, i]
                hn, seq = _pass_ps_device(lane[i], t, hn, seq, ht, hs, hp, ps_busy, ps_ring, ps_head, ps_count,
                                          ps_queue_offset, ps_queue_capacity, hold, row_of, nb, recording, started,
                                          on_cores, cores)
            elif k == KIND_DOWNLOAD:
                if params_out[w] == 1 and busy_lanes[w] == 0:
                    acct[1, w] += t - acct_t[w]
                    acct_t[w] = t
                params_out[w] -= 1
            if recording:
                record_done(tl, w, i, n, k == KIND_DOWNLOAD or k == KIND_UPLOAD, t, delay_s, steps_done[w])
            closed = False
            for e in range(succ_ptr[i], succ_ptr[i + 1]):
                s = succ_idx[e]
                left = pending[base + s] - 1
                if left:
                    pending[base + s] = left
                    continue
                pending[base + s] = 0
                ks = kind[s]
                if ks == KIND_COMPUTE:
                    lq = w * n_lanes + lane[s]
                    if lane_busy[lq]:
                        rank_push(lane_queue, w * lane_width + lane_offset[lane[s]], lane_queued[lq], s, lane_rank)
                        lane_queued[lq] += 1
                    else:
                        lane_busy[lq] = True
                        if busy_lanes[w] == 0:
                            dt = t - acct_t[w]
                            if params_out[w]:
                                acct[1, w] += dt
                            else:
                                acct[2, w] += dt
                            acct_t[w] = t
                        busy_lanes[w] += 1
                        if recording:
                            started[base + s] = t
                        if on_cores:
                            cores_start(cores, t, pack_event(EV_DONE, w, s, nb), hold[row, s], seq)
                        else:
                            hn = event_push(ht, hs, hp, hn, t + hold[row, s], seq, pack_event(EV_DONE, w, s, nb))
                        seq += 1
                elif ks == KIND_PS:
                    g = ps_gap_s[s]
                    if ps_not_before[w] > t + g:
                        g = ps_not_before[w] - t
                    if g > 0.0:
                        hn = event_push(ht, hs, hp, hn, t + g, seq, pack_event(EV_PS_READY, w, s, nb))
                        seq += 1
                    else:
                        p = lane[s]
                        if ps_busy[p]:
                            slot = _wrap(ps_head[p] + ps_count[p], ps_queue_capacity[p])
                            ps_ring[ps_queue_offset[p] + slot] = w << nb | s
                            ps_count[p] += 1
                        else:
                            ps_busy[p] = True
                            if recording:
                                started[base + s] = t
                            if on_cores:
                                cores_start(cores, t, pack_event(EV_DONE, w, s, nb), hold[row, s], seq)
                            else:
                                hn = event_push(ht, hs, hp, hn, t + hold[row, s], seq, pack_event(EV_DONE, w, s, nb))
                            seq += 1
                elif ks == KIND_DOWNLOAD or ks == KIND_UPLOAD:
                    d = lane[s]
                    if may_abort:
                        carried[2 * w + d] += 1
                        if carried[2 * w + d] > carry_room[d]:
                            status = STATUS_GROW_LINK
                            closed = True
                            break
                    b = bits[s]
                    if burst_f[0] > 0.0 and b > 0.0 and link_connections(links, d) == 0:
                        tokens = min(burst_f[0], burst_f[1 + d] + (t - burst_f[3 + d]) * capacity_alone[d])
                        passed = min(b, tokens)
                        burst_f[1 + d] = tokens - passed
                        burst_f[3 + d] = t
                        b -= passed
                    if recording:
                        started[base + s] = t
                        # fifo admits when it starts serving, a capped link when a stream is free
                        if b <= 0.0 or (codes[d] != SHARING_FIFO and max_streams[d] == 0):
                            admitted[base + s] = t
                    if b <= 0.0:
                        a_count = _arrive(at, as_, ap, a_head, a_count, t + delay_s, seq, pack_event(EV_DONE, w, s, nb))
                        seq += 1
                        continue
                    if may_abort:
                        in_link[base + s] = True
                    if requests_wait and d == 1:
                        rq_f[RQ_ADMITTED] += b
                        if uploads_on_link[w] == 0:
                            uploading_since[w] = t
                        uploads_on_link[w] += 1
                    rank = order_rank[s]
                    if draws_ranks:  # the reference's random order draws as the transfer joins
                        rank = rank_draws[next_rank] if next_rank < rank_draws.shape[0] else 0.0
                        next_rank += 1
                    if max_streams[d]:
                        nt = link_wait(links, d, t, step_start[w], rank, w, s, b)
                    elif per_transfer:
                        nt = transfer_add(links, d, t, w, s, b)
                    else:
                        nt = link_add(links, d, t, step_start[w], rank, w, s, b)
                    # Only an earlier finish needs a new event; if the arrival delayed the next
                    # finish, the event already queued fires early, finds nothing and re-arms.
                    if nt < link_sched[d]:
                        link_sched[d] = nt
                        link_armed[d] = True
                        link_version[d] = seq
                        seq += 1
                    if ack_coupled and not direction_busy[d]:
                        direction_busy[d] = True
                        o = 1 - d
                        link_set_capacity(links, o, t,
                                          direction_bps(o, direction_busy[1 - o], contended[o], contention,
                                                        capacity_alone, capacity_shared, reverse))
                        nt = transfer_next_time(links, o) if per_transfer else link_next_time(links, o)
                        link_sched[o] = nt
                        if nt < inf:
                            link_armed[o] = True
                            link_version[o] = seq
                            seq += 1
                        else:
                            link_armed[o] = False
                            link_version[o] = -1
                    if loss_coupled and not contended[d] and link_connections(links, d) > 1:
                        contended[d] = True
                        link_set_capacity(links, d, t,
                                          direction_bps(d, direction_busy[1 - d], True, contention,
                                                        capacity_alone, capacity_shared, reverse))
                        nt = transfer_next_time(links, d) if per_transfer else link_next_time(links, d)
                        link_sched[d] = nt
                        if nt < inf:
                            link_armed[d] = True
                            link_version[d] = seq
                            seq += 1
                        else:
                            link_armed[d] = False
                            link_version[d] = -1
                elif ks == KIND_END:
                    # The worker's step is over: its gradient reaches the PS; the discipline
                    # decides what follows.
                    ops += 1
                    outcome = OUTCOME_APPLIED if step_applied(ds, w) else OUTCOME_DROPPED
                    wake_at = step_end(ds, w, t)
                    if wake_at != NO_WAKE:
                        hn = event_push(ht, hs, hp, hn, wake_at, seq, pack_event(EV_SYNC, 0, 0, nb))
                        seq += 1
                    if end_step(w, t, win, warmup_steps, target, acc, links, ps_busy_s, ds, books0, accounts0,
                                outcome):
                        status = STATUS_WINDOW_CLOSED
                        closed = True
                        break
                    if busy_lanes[w] == 0:
                        acct[2, w] += t - acct_t[w]
                        acct_t[w] = t
                    hn, seq, n_redraw, closed = resume(
                        w, t, hn, seq, n_redraw, ds, gate, starts, redraw, per_worker, win, warmup_steps, target, acc,
                        links, ps_busy_s, books0, accounts0, work, heap, pending, indegree, step_start, n_downloads,
                        start_node, n_lanes, nb, rq)
                    if closed:
                        status = STATUS_WINDOW_CLOSED
                        break
            if closed:
                break
            if k == KIND_COMPUTE:
                # The lane is released after the successors are made ready, so a successor on the
                # same lane competes (by trace order) with ops already waiting for it.
                lq = w * n_lanes + lane[i]
                if lane_queued[lq]:
                    j = rank_pop(lane_queue, w * lane_width + lane_offset[lane[i]], lane_queued[lq], lane_rank)
                    lane_queued[lq] -= 1
                    if recording:
                        started[base + j] = t
                    if on_cores:
                        cores_start(cores, t, pack_event(EV_DONE, w, j, nb), hold[row, j], seq)
                    else:
                        hn = event_push(ht, hs, hp, hn, t + hold[row, j], seq, pack_event(EV_DONE, w, j, nb))
                    seq += 1
                else:
                    lane_busy[lq] = False
                    if busy_lanes[w] == 1:
                        acct[0, w] += t - acct_t[w]
                        acct_t[w] = t
                    busy_lanes[w] -= 1
        elif code == EV_LINK:
            d = w  # always the live timer: superseded ones never enter a source
            was_busy = fifo[1][d, FIFO_BUSY] == 1 if codes[d] == SHARING_FIFO else False
            if per_transfer:
                n_done = transfer_pop_finished(links, d, t, done_worker, done_node)
            else:
                n_done = link_pop_finished(links, d, t, done_worker, done_node)
            if max_streams[d]:
                link_admit(links, d, t)
            if recording and codes[d] == SHARING_FIFO:
                fifo_admitted(tl, fifo, d, was_busy, n_done, t, n)
            elif recording and max_streams[d] > 0:
                waiting_admitted(tl, wq, d, t, n)
            for q in range(n_done):
                if requests_wait and d == 1:
                    uploads_on_link[done_worker[q]] -= 1
                a_count = _arrive(at, as_, ap, a_head, a_count, t + delay_s, seq,
                                  pack_event(EV_DONE, done_worker[q], done_node[q], nb))
                seq += 1
            if loss_coupled and contended[d] and link_connections(links, d) < 2:
                contended[d] = False
                link_set_capacity(links, d, t,
                                  direction_bps(d, direction_busy[1 - d], False, contention,
                                                capacity_alone, capacity_shared, reverse))
            if burst_f[0] > 0.0 and link_connections(links, d) == 0:
                burst_f[3 + d] = t
            nt = transfer_next_time(links, d) if per_transfer else link_next_time(links, d)
            link_sched[d] = nt
            if nt < inf:
                link_armed[d] = True
                link_version[d] = seq
                seq += 1
            elif ack_coupled and direction_busy[d]:
                direction_busy[d] = False
                o = 1 - d
                link_set_capacity(links, o, t,
                                  direction_bps(o, direction_busy[1 - o], contended[o], contention,
                                                capacity_alone, capacity_shared, reverse))
                nt = transfer_next_time(links, o) if per_transfer else link_next_time(links, o)
                link_sched[o] = nt
                if nt < inf:
                    link_armed[o] = True
                    link_version[o] = seq
                    seq += 1
                else:
                    link_armed[o] = False
                    link_version[o] = -1
        elif code == EV_SYNC:
            wake_at = wake(ds, t, cutoff_rng)
            if wake_at != NO_WAKE:
                hn = event_push(ht, hs, hp, hn, wake_at, seq, pack_event(EV_SYNC, 0, 0, nb))
                seq += 1
            hn, seq, n_redraw, closed = resume(
                np.int64(-1), t, hn, seq, n_redraw, ds, gate, starts, redraw, per_worker, win, warmup_steps, target,
                acc, links, ps_busy_s, books0, accounts0, work, heap, pending, indegree, step_start, n_downloads,
                start_node, n_lanes, nb, rq)
            if closed:
                status = STATUS_WINDOW_CLOSED
                break
        else:  # EV_PS_READY
            if sq < abort_seq[w]:
                continue  # a PS op of an interrupted step, still in its gap
            p = lane[i]
            if ps_busy[p]:
                ps_ring[ps_queue_offset[p] + _wrap(ps_head[p] + ps_count[p], ps_queue_capacity[p])] = w << nb | i
                ps_count[p] += 1
            else:
                ps_busy[p] = True
                if recording:
                    started[w * n + i] = t
                if on_cores:
                    cores_start(cores, t, pack_event(EV_DONE, w, i, nb), hold[w * row_of, i], seq)
                else:
                    hn = event_push(ht, hs, hp, hn, t + hold[w * row_of, i], seq, pack_event(EV_DONE, w, i, nb))
                seq += 1
        # The reference draws a step's durations when it starts, mid-event, but reads the ended
        # step's until the event is done; drawing here is the same stream, same order.
        for q in range(n_redraw):
            v = redraw[q]
            if sampled:
                u = rng.random(n)
                for j in range(n):
                    index = sample_offset[j] + np.int64(u[j] * sample_count[j])
                    hold[v, j] = samples_us[index] * op_scale_s[j] + held_gap_s[j]
            else:
                for j in range(n):
                    hold[v, j] = mean_hold[0, j]
            if scaled:
                factors_short = _scale_step(hold, v, kind, factors, step_index) or factors_short
        n_redraw = np.int64(0)

    if status == STATUS_WINDOW_CLOSED:
        snapshot(acc, win_f[W_T1], links, ps_busy_s, ds, books1, accounts1)
    if ds[0][I_HIST_SHORT]:
        status = STATUS_GROW_STALENESS
    in_flight = link_connections(links, np.int64(0)) + link_connections(links, np.int64(1))
    return (status, ops, win_f[W_T0], win_f[W_T1], win_i[W_COUNTED], own_steps, first_end, last_end, books0, books1,
            accounts0, accounts1, ds[10], in_flight, tl, next_rank > rank_draws.shape[0], factors_short,
            seniority_words_short(sen))
