"""The event loop: N asynchronous workers repeating one step graph on shared resources.

Semantics (one run):

- Every worker repeats the step graph with no barrier between workers (asynchronous SGD). A
  worker's step ends when ``step_end``'s predecessors complete; its next step starts at once.
- A worker's compute op starts when all its inputs are ready and its lane (thread or stream) is
  free; ops on one lane run one at a time, in trace order when several are ready; ops on
  different lanes overlap. The op's measured dispatch gap is charged on its lane before it.
- A PS op waits its measured gap (without holding the PS processor, since in the trace that
  wait is dominated by RPC delivery, not work), then queues first-come first-served for its PS
  device, which all workers share.
- A transfer (parameter download or gradient upload) starts when its producer finishes; it
  crosses its direction of the link under the sharing model, then arrives after the
  direction's latency plus the per-transfer overhead. A direction's capacity is its payload
  rate, less the ACKs of the other direction while that one carries data, times the link's
  contention efficiency while two or more workers' connections send on it.
- A direction behind a token bucket (``LinkConfig.burst_bytes``, as a ``tbf`` shaper has) refills it
  at the line rate while it carries nothing; a transfer that starts on it idle passes up to the
  bucket's bits at once, and only the rest crosses the line.
- Behind a deep upload buffer (``LinkConfig.request_queue_s``) a worker's step reaches the PS
  behind the gradient bytes other workers have queued in the upload direction: its PS ops (the
  parameter reads its downloads wait for) start no earlier than that backlog after the step
  starts. The backlog is what those uploads have left, at most the request queue, and at most
  ``LinkConfig.request_queue_growth`` times how long each has been sending (a queue fills as its sender's
  window grows). A lone worker never waits: its own gradients have arrived when its step ends.
- Time is in seconds. Events are ``(time, seq, code, worker, node)`` tuples on one heap; ``seq``
  breaks ties deterministically. No object is allocated per event beyond that tuple.

Throughput is measured in the window between the moment every worker has finished its warm-up
steps and the moment the requested number of further steps (over all workers) has completed:
it is the sum of the workers' own rates, each counted between its first and last step end in
the window (the plain count over the window when some worker ends fewer than two steps in it).

This module knows nothing of files, plots or the CLI.
"""

from __future__ import annotations

import heapq
import math
import random
import sys
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from replay.engine.compiled import (
    DOWNLINK,
    KIND_COMPUTE,
    KIND_DOWNLOAD,
    KIND_END,
    KIND_PS,
    KIND_UPLOAD,
    UPLINK,
    CompiledGraph,
)
from replay.engine.cores import SharedCores
from replay.engine.link import LinkConfig
from replay.engine.order import OrderPolicy, TraceOrder
from replay.engine.sharing import FairSharing, SharingModel
from replay.engine.slowdown import NO_SLOWDOWN, SlowdownSpec, StepMultipliers
from replay.sync.base import AsyncTraining, DisciplineRun, SyncDiscipline

_DONE = 0  # a node of a worker completes (an op finishes or a transfer arrives)
_LINK = 1  # a link direction may have finished transfers (worker field = direction)
_PS_READY = 2  # a PS op has waited its gap and queues for its PS device
_SYNC = 3  # the sync discipline asked to be woken (an aggregated update completes)
_REQUESTED = 4  # a download's request reaches the PS behind other workers' queued gradients
_CORES = 5  # compute ops on the shared cores may have ended (``shared_cores``)


class ReplayTimeOverflow(ValueError):
    """The replay's times passed the largest float: on a link this slow (or with a latency this
    long) no step can be timed. Raised instead of the run silently stalling, so callers can say
    which input is at fault."""


def time_overflow() -> ReplayTimeOverflow:
    return ReplayTimeOverflow(
        f"the replay's times overflow (past {sys.float_info.max:.3g} s): the link is too slow or its latency too "
        "long for a step to finish"
    )


@dataclass(frozen=True)
class TimelineRecord:
    """What happened in the first steps of a run, for the synthetic timeline (times in seconds)."""

    # (worker, node, start_s, end_s, step); for transfers start/end are the link service.
    ops: list[tuple[int, int, float, float, int]] = field(default_factory=list)
    # (worker, node, requested_s, link_start_s, link_end_s, arrival_s, step)
    transfers: list[tuple[int, int, float, float, float, float, int]] = field(default_factory=list)
    # (worker, step, start_s, end_s, outcome): outcome "applied", "dropped" (the PS refused the
    # gradient: stale or late) or "aborted" (the discipline interrupted the step; no gradient sent)
    steps: list[tuple[int, int, float, float, str]] = field(default_factory=list)
    # (worker, step, start_s, wait_s): how long a step's requests waited behind the upload
    # backlog (``LinkConfig.request_queue_s``); only where the link has a request queue
    request_waits: list[tuple[int, int, float, float]] = field(default_factory=list)


@dataclass(frozen=True)
class RunResult:
    """One replay of N workers. Per-step times are means over the measured window."""

    workers: int
    steps_per_second: float
    measured_steps: int
    window_s: float
    step_time_s: float
    compute_s: float
    waiting_for_parameters_s: float
    waiting_for_link_s: float
    waiting_for_peers_s: float  # held back by the sync discipline (0 for asynchronous training)
    updates_per_second: float  # PS updates: worker steps in asynchronous training, fewer when aggregated
    gradients_applied_per_second: float
    gradients_dropped_per_second: float  # gradients refused (stale, late) or never sent (interrupted steps)
    staleness_mean: float  # PS updates between a worker's read and its gradient's update, over applied gradients
    staleness_p99: float
    staleness_max: int
    staleness_counts: tuple[int, ...]  # applied gradients of staleness 0, 1, ... (the last bin holds the rest)
    # Per worker, shares of the window: computing, and held back by the discipline (in worker order).
    worker_compute_share: tuple[float, ...]
    worker_waiting_for_peers_share: tuple[float, ...]
    downlink_utilization: float
    uplink_utilization: float
    ps_utilization: float
    simulated_ops: int
    end_time_s: float
    timeline: TimelineRecord | None = None


@dataclass(frozen=True)
class DurationModel:
    """How op durations are drawn: from the measured samples or their means, times a scale."""

    compute_scale: float = 1.0
    deterministic: bool = False


def _recapacity(links: list[Any], d: int, now: float, capacity_bps: float, link_sched: list[float],
                link_version: list[int], heap: list[tuple[float, int, int, int, int]], seq: int) -> int:
    """Give direction ``d`` a new capacity from ``now`` and re-arm its next finish; returns the next seq."""
    lk = links[d]
    lk.set_capacity(now, capacity_bps)
    nt = lk.next_time()
    link_sched[d] = nt
    if nt < math.inf:
        heapq.heappush(heap, (nt, seq, _LINK, d, seq))
        link_version[d] = seq
        return seq + 1
    link_version[d] = -1
    return seq


def check_run_arguments(workers: int, measured_steps: int, warmup_steps: int, seed: int) -> None:
    """Refuse a run no engine can replay; the Python engine and the compiled kernel share it."""
    if workers < 1:
        raise ValueError("workers must be at least 1")
    if measured_steps < 1 or warmup_steps < 0:
        raise ValueError("need at least one measured step and no negative warm-up")
    if seed < 0:
        raise ValueError(f"seed must be zero or more (numpy's generators take no negative seed), got {seed}")


def check_shared_cores(shared_cores: int, discipline: SyncDiscipline | None) -> None:
    """Refuse shared cores no engine replays: fewer than none, or under a discipline that
    interrupts steps, whose interrupted compute would stay on the cores."""
    if shared_cores < 0:
        raise ValueError(f"shared cores must be 0 (none) or more, got {shared_cores}")
    if shared_cores and discipline is not None and discipline.interrupts_steps:
        raise ValueError(f"shared cores are not replayed with --sync {discipline.name}, which interrupts steps")


def simulate(
    compiled: CompiledGraph,
    workers: int,
    link: LinkConfig,
    *,
    sharing: SharingModel | None = None,
    order: OrderPolicy | None = None,
    durations: DurationModel = DurationModel(),
    measured_steps: int = 40,
    warmup_steps: int = 2,
    seed: int = 0,
    record_steps: int = 0,
    stagger_s: float = 0.0,
    slowdown: SlowdownSpec = NO_SLOWDOWN,
    worker_speeds: tuple[float, ...] = (),
    discipline: SyncDiscipline | None = None,
    shared_cores: int = 0,
) -> RunResult:
    """Replay ``workers`` workers until ``measured_steps`` steps per worker (in total over all
    workers) have completed after warm-up; see the module docstring for the semantics.

    Worker 0 starts at time 0; the others start spread over ``stagger_s`` (evenly with
    deterministic durations, uniformly at random otherwise), as real workers join at different
    moments. Without it identical workers stay in lock-step on a fairly shared link.

    ``worker_speeds`` (the first workers' compute speeds relative to the profiled one; the rest
    at 1) and ``slowdown`` (a process of per-step slowdowns) make workers unequal
    (``replay.engine.slowdown``). ``discipline`` decides whether a worker may start its next
    step when it ends one (``replay.sync.disciplines``; None: asynchronous). ``shared_cores``
    (0: each worker on a machine of its own) lets every worker's compute ops share that many
    cores, as when all the workers run on one machine (``replay.engine.cores``)."""
    check_run_arguments(workers, measured_steps, warmup_steps, seed)
    check_shared_cores(shared_cores, discipline)
    sharing = sharing or FairSharing()
    order = order or TraceOrder()
    np_rng = np.random.default_rng(seed)
    py_rng = random.Random(int(np_rng.integers(0, 2**63 - 1)))
    order_key = order.ranker(compiled, py_rng)

    n = compiled.n
    kind = compiled.kind
    succ = compiled.successors
    lane = compiled.lane
    rank = compiled.trace_rank
    indeg = list(compiled.indegree)
    n_lanes = compiled.n_worker_lanes
    n_downloads = compiled.n_downloads
    start_node = compiled.start
    scale_s = durations.compute_scale * 1e-6

    # Per-node constants of a step: what a compute op holds its lane for is gap + duration;
    # a PS op waits its gap off the processor and holds the processor for its duration.
    is_compute = np.array([k == KIND_COMPUTE for k in kind])
    is_op = np.array([k in (KIND_COMPUTE, KIND_PS) for k in kind])
    gap = np.array(compiled.gap_us, dtype=np.float64)
    held_gap_s = np.where(is_compute, gap, 0.0) * scale_s
    ps_gap_s = [(g * scale_s if k == KIND_PS else 0.0) for g, k in zip(compiled.gap_us, kind, strict=True)]
    op_scale_s = np.where(is_op, scale_s, 0.0)
    bits = [8.0 * b for b in compiled.bytes]
    mean_hold = (np.array(compiled.mean_us) * op_scale_s + held_gap_s).tolist()
    sample_offset = compiled.sample_offset
    sample_count = compiled.sample_count.astype(np.float64)
    samples = compiled.samples_us
    deterministic = durations.deterministic

    def draw_hold() -> list[float]:
        if deterministic:
            return mean_hold
        index = sample_offset + (np_rng.random(n) * sample_count).astype(np.int64)
        return (samples[index] * op_scale_s + held_gap_s).tolist()

    multipliers = StepMultipliers(slowdown, worker_speeds, workers, seed)
    compute_flags = is_compute.tolist()

    def worker_hold(w: int) -> list[float]:
        """The next step's hold times of worker ``w``: its compute slowed by its step multiplier."""
        base = draw_hold()
        if multipliers.uniform:
            return base
        factor = multipliers.next(w)
        if factor == 1.0:
            return base
        return [h * factor if c else h for h, c in zip(base, compute_flags, strict=True)]

    # The links' own random events (connections overtaking each other) draw from a stream of their
    # own, so that models without them replay exactly as before for the same seed.
    link_rng = random.Random(f"links-{seed}")
    links = [
        sharing.new_download_link(link.download_payload_bps(), link.worker_payload_caps(workers, upload=False), workers,
                                  rng=link_rng, transfer_s=8.0 * compiled.download_bytes / link.download_payload_bps()),
        sharing.new_upload_link(link.upload_payload_bps(), link.worker_payload_caps(workers, upload=True), workers,
                                rng=link_rng, transfer_s=8.0 * compiled.upload_bytes / link.upload_payload_bps()),
    ]
    link_sched = [math.inf, math.inf]
    link_version = [-1, -1]
    # While one direction carries data, the other carries its ACKs and has that much less room;
    # behind a deep buffer a lone transfer there also waits for its ACKs (reverse efficiency).
    ack_coupled = link.directions_coupled()
    capacity_alone = (link.download_payload_bps(), link.upload_payload_bps())
    # The token bucket in front of each direction (``LinkConfig.burst_bytes``), in payload bits: full at
    # the start, refilled at the line rate from the moment its direction last went idle.
    burst_bits = link.burst_payload_bits()
    bucket_bits = [burst_bits, burst_bits]
    idle_since = [0.0, 0.0]
    capacity_shared = (link.download_payload_bps_while_uploading(), link.upload_payload_bps_while_downloading())
    direction_busy = [False, False]
    # While several connections send on a direction, losses at its queue idle part of the line.
    # A lone transfer pays the reverse efficiency instead: track both whenever either applies.
    contention = link.contention_efficiency
    reverse = (link.reverse_efficiency(upload=False), link.reverse_efficiency(upload=True))
    loss_coupled = contention < 1.0 or min(reverse) < 1.0
    contended = [False, False]

    def capacity_of(d: int) -> float:
        if contended[d]:
            return (capacity_shared[d] if direction_busy[1 - d] else capacity_alone[d]) * contention
        return capacity_shared[d] * reverse[d] if direction_busy[1 - d] else capacity_alone[d]

    delay_s = link.latency_s + link.per_transfer_overhead_s
    # The upload backlog a step's requests wait behind (module docstring): bits admitted to the
    # upload link and not yet served, and per worker its uploads on the link and since when.
    request_queue_s = link.request_queue_s
    request_queue_growth = link.request_queue_growth
    upload_admitted_bits = 0.0
    uploads_on_link = [0] * workers
    uploading_since = [0.0] * workers
    ps_not_before = [0.0] * workers

    def request_wait_s(now: float) -> float:
        left = upload_admitted_bits - links[UPLINK].served_bits(now)
        if left <= 0.0:
            return 0.0
        grown = 0.0
        for v in range(workers):
            if uploads_on_link[v]:
                grown += (now - uploading_since[v]) * request_queue_growth
        return min(request_queue_s, left / capacity_alone[UPLINK], grown)

    pending = indeg * workers
    hold: list[list[float]] = [mean_hold] * workers
    lane_busy = [False] * (workers * n_lanes)
    lane_queue: list[list[tuple[int, int]]] = [[] for _ in range(workers * n_lanes)]
    ps_busy = [False] * compiled.n_ps_lanes
    ps_queue: list[deque[tuple[int, int]]] = [deque() for _ in range(compiled.n_ps_lanes)]
    step_start = [0.0] * workers
    steps_done = [0] * workers
    started = [0.0] * (workers * n)  # start time of each worker's current op / transfer request

    # Step-time breakdown: per worker, time with a lane busy / idle waiting for parameters / idle otherwise.
    busy_lanes = [0] * workers
    params_out = [0] * workers
    acct_t = [0.0] * workers
    acct_compute = [0.0] * workers
    acct_params = [0.0] * workers
    acct_link = [0.0] * workers
    acct_peers = [0.0] * workers  # held back by the sync discipline
    waiting_for_peers = [False] * workers
    waiting: list[int] = []  # the workers waiting_for_peers, in the order they began to wait
    # One aggregated update of synchronous training holds the PS for the step's PS op time.
    ps_update_s = sum(mean_hold[i] for i in range(n) if kind[i] == KIND_PS)
    run = (discipline or AsyncTraining()).new_run(workers, ps_update_s, seed)
    gate = run if run.gates_steps else None
    # Interrupted steps: events pushed before a worker's interruption (seq below abort_seq) are
    # skipped, except that a PS op still frees its device; its transfers still on a link finish
    # as zombies (their bytes were sent) and are skipped by count.
    abort_seq = [0] * workers
    in_link = [False] * (workers * n)
    zombies = [0] * (workers * n)
    transfer_nodes = [i for i in range(n) if kind[i] in (KIND_DOWNLOAD, KIND_UPLOAD)]
    aborts = run.aborts
    cores = SharedCores(shared_cores) if shared_cores else None
    cores_version = -1

    def start_on_cores(t: float, w: int, s: int, work_s: float) -> None:
        """Worker ``w``'s op ``s`` (a compute op holding its lane, or a PS op its device) runs for
        ``work_s`` seconds, or on the shared cores for that much work: a local run's PS shares
        the machine too."""
        nonlocal seq, cores_version
        if cores is None:
            push(heap, (t + work_s, seq, _DONE, w, s))
        else:
            push(heap, (cores.add(t, w, s, work_s), seq, _CORES, 0, seq))
            cores_version = seq
        seq += 1

    def start_steps(t: float, ready: Iterable[int]) -> None:
        """Workers in ``ready`` start their next step at ``t``."""
        nonlocal seq
        for v in ready:
            vb = v * n
            pending[vb : vb + n] = indeg
            step_start[v] = t
            if request_queue_s > 0.0:
                wait = request_wait_s(t)
                ps_not_before[v] = t + wait
                if recording and steps_done[v] < record_steps:
                    record.request_waits.append((v, steps_done[v], t, wait))
            hold[v] = worker_hold(v)
            params_out[v] = n_downloads
            run.on_step_start(v, t)
            push(heap, (t, seq, _DONE, v, start_node))
            seq += 1

    def pass_ps_device(p: int, t: float) -> None:
        """PS device ``p`` finished an op: start the next queued one, or leave it idle."""
        nonlocal seq
        q = ps_queue[p]
        if q:
            w2, j = q.popleft()
            started[w2 * n + j] = t
            start_on_cores(t, w2, j, hold[w2][j])
        else:
            ps_busy[p] = False

    def settle(v: int, now: float) -> None:
        """Charge worker ``v``'s time since its last change of state to the state it was in."""
        dt = now - acct_t[v]
        if waiting_for_peers[v]:
            acct_peers[v] += dt
        elif busy_lanes[v]:
            acct_compute[v] += dt
        elif params_out[v]:
            acct_params[v] += dt
        else:
            acct_link[v] += dt
        acct_t[v] = now

    def interrupt(v: int, t: float) -> None:
        """Abandon worker ``v``'s step: its queued work is dropped, its work in flight ignored."""
        nonlocal seq
        settle(v, t)
        abort_seq[v] = seq
        vb = v * n
        for li in range(v * n_lanes, (v + 1) * n_lanes):
            lane_busy[li] = False
            lane_queue[li].clear()
        busy_lanes[v] = 0
        params_out[v] = 0
        for p, q in enumerate(ps_queue):
            if any(u == v for u, _ in q):
                ps_queue[p] = deque((u, j) for u, j in q if u != v)
        for i in transfer_nodes:
            if in_link[vb + i]:
                in_link[vb + i] = False
                zombies[vb + i] += 1

    def release_waiting(t: float, first: int | None = None) -> list[int]:
        """Workers the discipline lets go now, ``first`` (the one that just ended a step) asked first."""
        assert gate is not None
        order = [first, *(u for u in waiting if u != first)] if first is not None else waiting
        ready = [v for v in order if gate.may_start(v, steps_done)]
        for v in ready:
            waiting_for_peers[v] = False
            acct_peers[v] += t - acct_t[v]
            acct_t[v] = t
        waiting[:] = [u for u in order if waiting_for_peers[u]]
        return ready
    ps_busy_s = 0.0

    recording = record_steps > 0
    record = TimelineRecord() if recording else None
    if record is not None:
        for lk in links:
            lk.admitted_at = {}

    warm = 0
    t0 = None if warmup_steps > 0 else 0.0
    t1 = math.inf
    counted = 0
    # Each worker's own rate, between its first and last step end inside the window: summing
    # these avoids the bias of cutting other workers' steps at the window's edges.
    first_end = [-1.0] * workers
    last_end = [-1.0] * workers
    own_steps = [0] * workers
    target = measured_steps * workers
    snap0: tuple[float, ...] | None = None
    ops = 0
    total_steps_done = 0

    heap: list[tuple[float, int, int, int, int]] = []
    push = heapq.heappush
    pop = heapq.heappop
    seq = 0
    for w in range(workers):
        if w == 0 or stagger_s <= 0.0:
            begin = 0.0
        elif deterministic:
            begin = stagger_s * w / workers
        else:
            begin = float(np_rng.uniform(0.0, stagger_s))
        hold[w] = worker_hold(w)
        params_out[w] = n_downloads
        step_start[w] = begin
        acct_t[w] = begin
        run.on_step_start(w, begin)
        push(heap, (begin, seq, _DONE, w, start_node))
        seq += 1
    first_wake = run.first_wake()
    if first_wake is not None:
        push(heap, (first_wake, seq, _SYNC, 0, 0))
        seq += 1

    def snapshot(now: float) -> tuple[Any, ...]:
        for v in range(workers):
            settle(v, now)
        return (
            links[DOWNLINK].served_bits(now),
            links[UPLINK].served_bits(now),
            ps_busy_s,
            sum(acct_compute),
            sum(acct_params),
            sum(acct_link),
            sum(acct_peers),
            *run.counters(),
            tuple(acct_compute),
            tuple(acct_peers),
        )

    def end_step(w: int, t: float, outcome: str) -> bool:
        """Account worker ``w``'s step that ended at ``t``; True when the measurement window closes."""
        nonlocal recording, total_steps_done, t0, snap0, warm, counted, t1
        if recording and steps_done[w] < record_steps:
            record.steps.append((w, steps_done[w], step_start[w], t, outcome))
        steps_done[w] += 1
        total_steps_done += 1
        if t0 is None:
            if steps_done[w] == warmup_steps:
                warm += 1
                if warm == workers:
                    t0 = t
                    snap0 = snapshot(t)
        elif t > t0:
            counted += 1
            if first_end[w] < 0.0:
                first_end[w] = t
            else:
                own_steps[w] += 1
            last_end[w] = t
            if counted >= target:
                t1 = t
                return True
        if recording and min(steps_done) >= record_steps:
            recording = False
        return False

    def interrupt_requested(t: float) -> list[int]:
        """Interrupt the workers the discipline named; they end their step now, nothing sent."""
        victims = list(aborts)
        aborts.clear()
        for v in victims:
            interrupt(v, t)
            if end_step(v, t, "aborted"):
                return []
        return victims

    def after_burst(d: int, t: float, b: float) -> float:
        """The bits of a transfer starting on idle direction ``d`` that the bucket does not pass at once."""
        tokens = min(burst_bits, bucket_bits[d] + (t - idle_since[d]) * capacity_alone[d])
        passed = min(b, tokens)
        bucket_bits[d] = tokens - passed
        idle_since[d] = t
        return b - passed

    def start_transfer(t: float, w: int, s: int) -> None:
        """Transfer ``s`` of worker ``w`` joins its direction of the link at ``t``."""
        nonlocal seq, upload_admitted_bits
        base = w * n
        started[base + s] = t
        b = bits[s]
        if burst_bits > 0.0 and b > 0.0 and links[lane[s]].connections() == 0:
            b = after_burst(lane[s], t, b)
        if b <= 0.0:
            if recording:
                links[lane[s]].admitted_at[(w, s)] = t
            push(heap, (t + delay_s, seq, _DONE, w, s))
            seq += 1
            return
        d = lane[s]
        lk = links[d]
        in_link[base + s] = True
        if d == UPLINK and request_queue_s > 0.0:
            upload_admitted_bits += b
            if not uploads_on_link[w]:
                uploading_since[w] = t
            uploads_on_link[w] += 1
        nt = lk.add(t, order_key(step_start[w], s), w, s, b)
        # Only an earlier finish needs a new event; if the arrival delayed the next
        # finish, the event already queued fires early, finds nothing and re-arms.
        if nt < link_sched[d]:
            link_sched[d] = nt
            push(heap, (nt, seq, _LINK, d, seq))
            link_version[d] = seq
            seq += 1
        if ack_coupled and not direction_busy[d]:
            direction_busy[d] = True
            seq = _recapacity(links, 1 - d, t, capacity_of(1 - d), link_sched, link_version, heap, seq)
        if loss_coupled and not contended[d] and lk.connections() > 1:
            contended[d] = True
            seq = _recapacity(links, d, t, capacity_of(d), link_sched, link_version, heap, seq)

    if t0 == 0.0:
        snap0 = snapshot(0.0)

    while heap:
        t, sq, code, w, i = pop(heap)
        if t == math.inf:
            raise time_overflow()
        if code == _DONE:
            ops += 1
            k = kind[i]
            base = w * n
            if sq < abort_seq[w] or zombies[base + i]:
                # work of an interrupted step: a transfer that was on a link is struck off, a PS op
                # frees its device, the rest is forgotten
                if zombies[base + i]:
                    zombies[base + i] -= 1
                elif k == KIND_PS:
                    pass_ps_device(lane[i], t)
                continue
            if k == KIND_COMPUTE:
                # The lane is released after the successors are made ready, so a successor on the
                # same lane competes (by trace order) with ops already waiting for it.
                pass
            elif k == KIND_PS:
                ps_busy_s += hold[w][i]
                pass_ps_device(lane[i], t)
            elif k == KIND_DOWNLOAD:
                if params_out[w] == 1 and not busy_lanes[w]:
                    acct_params[w] += t - acct_t[w]
                    acct_t[w] = t
                params_out[w] -= 1
                in_link[base + i] = False
            elif k == KIND_UPLOAD:
                in_link[base + i] = False
            if recording and steps_done[w] < record_steps:
                if k == KIND_DOWNLOAD or k == KIND_UPLOAD:
                    lk = links[lane[i]]
                    requested = started[base + i]
                    admitted = lk.admitted_at.pop((w, i), requested)
                    record.transfers.append((w, i, requested, admitted, t - delay_s, t, steps_done[w]))
                else:
                    record.ops.append((w, i, started[base + i], t, steps_done[w]))
            hw = hold[w]
            for s in succ[i]:
                left = pending[base + s] - 1
                if left:
                    pending[base + s] = left
                    continue
                pending[base + s] = 0
                ks = kind[s]
                if ks == KIND_COMPUTE:
                    li = w * n_lanes + lane[s]
                    if lane_busy[li]:
                        heapq.heappush(lane_queue[li], (rank[s], s))
                    else:
                        lane_busy[li] = True
                        if not busy_lanes[w]:
                            dt = t - acct_t[w]
                            if params_out[w]:
                                acct_params[w] += dt
                            else:
                                acct_link[w] += dt
                            acct_t[w] = t
                        busy_lanes[w] += 1
                        started[base + s] = t
                        start_on_cores(t, w, s, hw[s])
                elif ks == KIND_PS:
                    g = ps_gap_s[s]
                    if ps_not_before[w] > t + g:
                        g = ps_not_before[w] - t
                    if g > 0.0:
                        push(heap, (t + g, seq, _PS_READY, w, s))
                        seq += 1
                    else:
                        p = lane[s]
                        if ps_busy[p]:
                            ps_queue[p].append((w, s))
                        else:
                            ps_busy[p] = True
                            started[base + s] = t
                            start_on_cores(t, w, s, hw[s])
                elif ks == KIND_DOWNLOAD or ks == KIND_UPLOAD:
                    if ks == KIND_DOWNLOAD and ps_not_before[w] > t:
                        # the step's requests are still queued behind other workers' gradients
                        push(heap, (ps_not_before[w], seq, _REQUESTED, w, s))
                        seq += 1
                    else:
                        start_transfer(t, w, s)
                elif ks == KIND_END:
                    # The worker's step is over: its gradients reach the PS; start the next one.
                    ops += 1
                    wake = run.on_step_end(w, t)
                    if wake is not None:
                        push(heap, (wake, seq, _SYNC, 0, 0))
                        seq += 1
                    if end_step(w, t, "applied" if run.last_applied else "dropped"):
                        break
                    if not busy_lanes[w]:
                        acct_link[w] += t - acct_t[w]
                        acct_t[w] = t
                    victims = interrupt_requested(t) if aborts else ()
                    if t1 < math.inf:
                        break
                    if gate is None:
                        start_steps(t, (w, *victims))
                    else:
                        # The discipline may hold this worker back; ending a step may release others.
                        waiting_for_peers[w] = True
                        for v in victims:
                            waiting_for_peers[v] = True
                            waiting.append(v)
                        start_steps(t, release_waiting(t, w))
            if t1 < math.inf:
                break
            if k == KIND_COMPUTE:
                li = w * n_lanes + lane[i]
                q = lane_queue[li]
                if q:
                    j = heapq.heappop(q)[1]
                    started[base + j] = t
                    start_on_cores(t, w, j, hw[j])
                else:
                    lane_busy[li] = False
                    if busy_lanes[w] == 1:
                        acct_compute[w] += t - acct_t[w]
                        acct_t[w] = t
                    busy_lanes[w] -= 1
        elif code == _LINK:
            if i != link_version[w]:
                continue  # superseded by a later reschedule of this direction
            lk = links[w]
            for w2, j in lk.pop_finished(t):
                if w == UPLINK and request_queue_s > 0.0:
                    uploads_on_link[w2] -= 1
                push(heap, (t + delay_s, seq, _DONE, w2, j))
                seq += 1
            if loss_coupled and contended[w] and lk.connections() < 2:
                contended[w] = False
                lk.set_capacity(t, capacity_of(w))
            if burst_bits > 0.0 and lk.connections() == 0:
                idle_since[w] = t
            nt = lk.next_time()
            link_sched[w] = nt
            if nt < math.inf:
                push(heap, (nt, seq, _LINK, w, seq))
                link_version[w] = seq
                seq += 1
            elif ack_coupled and direction_busy[w]:
                direction_busy[w] = False
                seq = _recapacity(links, 1 - w, t, capacity_of(1 - w), link_sched, link_version, heap, seq)
        elif code == _CORES:
            if i != cores_version or cores is None:
                continue  # superseded by a later op's start
            for w2, j in cores.pop_finished(t):
                push(heap, (t, seq, _DONE, w2, j))
                seq += 1
            nt = cores.next_time()
            if nt < math.inf:
                push(heap, (nt, seq, _CORES, 0, seq))
                cores_version = seq
                seq += 1
        elif code == _SYNC:
            wake = run.on_wake(t)
            if wake is not None:
                push(heap, (wake, seq, _SYNC, 0, 0))
                seq += 1
            victims = interrupt_requested(t) if aborts else ()
            if t1 < math.inf:
                break
            if gate is None:
                start_steps(t, victims)
            else:
                for v in victims:
                    waiting_for_peers[v] = True
                    waiting.append(v)
                start_steps(t, release_waiting(t))
        elif code == _REQUESTED:
            if sq < abort_seq[w]:
                continue  # a download of an interrupted step, still waiting for its request
            start_transfer(t, w, i)
        else:  # _PS_READY
            if sq < abort_seq[w]:
                continue  # a PS op of an interrupted step, still in its gap
            p = lane[i]
            if ps_busy[p]:
                ps_queue[p].append((w, i))
            else:
                ps_busy[p] = True
                started[w * n + i] = t
                start_on_cores(t, w, i, hold[w][i])

    if t1 == math.inf or t0 is None or snap0 is None:
        if any(lk.connections() for lk in links):
            # Transfers in flight whose finish is not a finite time: the clock overflowed.
            raise time_overflow()
        raise RuntimeError("replay ended before the measurement window closed")
    snap1 = snapshot(t1)
    window = t1 - t0
    spans_resolved = all(b > a for a, b in zip(first_end, last_end, strict=True))
    if all(own_steps) and spans_resolved:
        rate = sum(k / (b - a) for k, a, b in zip(own_steps, first_end, last_end, strict=True))
    elif window > 0.0:
        # A worker's counted steps all ended at one float instant (steps shorter than the clock
        # resolves at this time): its own span says nothing, the window's count still does.
        rate = counted / window
    else:
        raise ReplayTimeOverflow("the replay's clock cannot resolve its steps (they are shorter than a float can "
                                 "tell apart at this time); check the graph's durations and the link")
    n_ps = compiled.n_ps_lanes
    per_step = 1.0 / counted
    return RunResult(
        workers=workers,
        steps_per_second=rate,
        measured_steps=counted,
        window_s=window,
        step_time_s=workers * window / counted,
        compute_s=(snap1[3] - snap0[3]) * per_step,
        waiting_for_parameters_s=(snap1[4] - snap0[4]) * per_step,
        waiting_for_link_s=(snap1[5] - snap0[5]) * per_step,
        waiting_for_peers_s=(snap1[6] - snap0[6]) * per_step,
        **_update_rates(snap0, snap1, window, rate, run),
        **staleness_summary(run.staleness[snap0[10]:snap1[10]]),
        worker_compute_share=tuple((b - a) / window for a, b in zip(snap0[11], snap1[11], strict=True)),
        worker_waiting_for_peers_share=tuple((b - a) / window for a, b in zip(snap0[12], snap1[12], strict=True)),
        downlink_utilization=(snap1[0] - snap0[0]) / (link.download_payload_bps() * window),
        uplink_utilization=(snap1[1] - snap0[1]) / (link.upload_payload_bps() * window),
        ps_utilization=min(1.0, (snap1[2] - snap0[2]) / (n_ps * window)),
        simulated_ops=ops,
        end_time_s=t1,
        timeline=record,
    )


def _update_rates(snap0: tuple[Any, ...], snap1: tuple[Any, ...], window: float, rate: float,
                  run: DisciplineRun) -> dict[str, float]:
    return update_rates(snap0[7:10], snap1[7:10], window, rate, run.one_update_per_step)


def update_rates(counts0: tuple[int, ...], counts1: tuple[int, ...], window: float, rate: float,
                 one_update_per_step: bool) -> dict[str, float]:
    """PS updates and gradients per second from the discipline's (updates, applied, dropped) at
    the window's two ends. Where every step is one update of one gradient (async, ssp) they are
    the step rate, measured as steps are; otherwise the discipline's counts over the window."""
    updates, applied, dropped = (counts1[k] - counts0[k] for k in range(3))
    if one_update_per_step:
        return {"updates_per_second": rate, "gradients_applied_per_second": rate, "gradients_dropped_per_second": 0.0}
    return {"updates_per_second": updates / window, "gradients_applied_per_second": applied / window,
            "gradients_dropped_per_second": dropped / window}


STALENESS_BINS = 1024


def staleness_summary(values: list[int]) -> dict[str, Any]:
    """Mean, 99th percentile and maximum staleness of the gradients applied in the window."""
    if not values:
        return {"staleness_mean": 0.0, "staleness_p99": 0.0, "staleness_max": 0, "staleness_counts": ()}
    array = np.asarray(values)
    counts = np.bincount(np.minimum(array, STALENESS_BINS - 1))
    return {"staleness_mean": float(array.mean()), "staleness_p99": float(np.percentile(array, 99)),
            "staleness_max": int(array.max()), "staleness_counts": tuple(int(c) for c in counts)}


def one_step_time_s(
    compiled: CompiledGraph,
    link: LinkConfig,
    *,
    sharing: SharingModel | None = None,
    order: OrderPolicy | None = None,
    compute_scale: float = 1.0,
) -> float:
    """Duration of one deterministic step of a single worker (every step of a lone deterministic
    worker is the same, since each starts with all resources idle)."""
    result = simulate(
        compiled,
        1,
        link,
        sharing=sharing,
        order=order,
        durations=DurationModel(compute_scale=compute_scale, deterministic=True),
        measured_steps=1,
        warmup_steps=0,
    )
    return result.window_s
