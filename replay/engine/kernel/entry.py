"""``simulate_fast``: the compiled kernel behind the reference engine's signature and result.

It checks the configuration (``support``), lays the graph out (``layout``), makes the random
draws that the reference makes before its loop (the seed of its Python generator, the workers'
start offsets, their first steps' durations) in the same order from the same NumPy generator,
hands that generator to the kernel for every later step, and turns the kernel's books into a
``RunResult`` with the reference's arithmetic, so both engines give the same floats. The
discipline is the reference's own ``new_run`` first (so a setting it refuses is refused with the
same error), then integer codes and the run's parameters for ``discipline.discipline_new``; the
dynamic cutoff's generator is the reference's, made here and passed through.

numba is imported on first use, not with this module: ``kernel_unavailable`` says why it cannot
be used (not installed, or its import failed), and a kernel that fails to compile raises
``KernelUnavailable``, which callers turn into a fallback to the reference.
"""

from __future__ import annotations

import functools
import importlib
import random
import sys
from types import ModuleType
from typing import Any

import numpy as np

from replay.engine.compiled import KIND_PS, CompiledGraph
from replay.engine.kernel.layout import draw_hold_s, layout_graph
from replay.engine.kernel.multipliers import scaled_first_steps, step_factors
from replay.engine.kernel.support import (
    CUTOFF_RULES,
    DISCIPLINE_CUTOFF,
    DISCIPLINE_SAPS,
    DISCIPLINE_SSP,
    DISCIPLINE_SYNC,
    SHARING_SENIORITY,
    direction_codes,
    discipline_code,
    shares_fairly,
    unsupported_setting,
)
from replay.engine.kernel.timeline_rows import C_RECORD_STEPS, timeline_record
from replay.engine.link import LinkConfig
from replay.engine.loop import (
    DurationModel,
    ReplayTimeOverflow,
    RunResult,
    check_run_arguments,
    check_shared_cores,
    staleness_summary,  # the reference's own summary, so both engines report alike
    time_overflow,
    update_rates,
)
from replay.engine.order import OrderPolicy, RandomOrder
from replay.engine.sharing import FifoSharing, SenioritySharing, SharingModel, _group_weights
from replay.engine.slowdown import NO_SLOWDOWN, SlowdownSpec
from replay.sync.base import AsyncTraining, DisciplineRun, SyncDiscipline
from replay.sync.cutoff import CutoffRun

# The reference's default: durations drawn from the samples, unscaled.
DRAWN_DURATIONS = DurationModel()


class KernelUnavailable(RuntimeError):
    """numba is missing or could not compile the kernel; the reference engine still can replay."""


@functools.cache
def _kernel_module() -> ModuleType | str:
    """The compiled loop's module, or why it cannot be had (imported once per process)."""
    try:
        return importlib.import_module("replay.engine.kernel.event_loop")
    except ImportError as exc:
        return f"numba cannot be imported ({exc})"
    except Exception as exc:  # numba present but broken (a mismatched llvmlite, say)
        return f"numba failed to load ({type(exc).__name__}: {exc})"


def kernel_unavailable() -> str | None:
    """Why the compiled kernel cannot run in this process, or None when it can."""
    module = _kernel_module()
    return module if isinstance(module, str) else None


def compile_kernel(compiled: CompiledGraph, workers: int, link: LinkConfig, *, sharing: SharingModel | None = None,
                   order: OrderPolicy | None = None) -> str | None:
    """Compile the kernel (or load it from numba's cache) with a one-step replay of this graph, so
    that a sweep's processes inherit it compiled; returns why it cannot run, or None."""
    reason = kernel_unavailable()
    if reason is not None:
        return reason
    try:
        simulate_fast(compiled, workers, link, sharing=sharing, order=order,
                      durations=DurationModel(deterministic=True), measured_steps=1, warmup_steps=0)
    except KernelUnavailable as exc:
        return str(exc)
    return None


def simulate_fast(
    compiled: CompiledGraph,
    workers: int,
    link: LinkConfig,
    *,
    sharing: SharingModel | None = None,
    order: OrderPolicy | None = None,
    durations: DurationModel = DRAWN_DURATIONS,
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
    """``replay.engine.loop.simulate`` for the configurations ``unsupported_setting`` accepts, with the
    same arguments and the same ``RunResult``. Raises ``ValueError`` for a configuration the
    kernel does not hold and ``KernelUnavailable`` when numba cannot run it."""
    check_run_arguments(workers, measured_steps, warmup_steps, seed)
    check_shared_cores(shared_cores, discipline)
    missing = unsupported_setting(sharing=sharing, order=order, discipline=discipline, link=link, compiled=compiled)
    if missing is not None:
        raise ValueError(f"{missing} is not in the compiled kernel yet")
    module = _kernel_module()
    if isinstance(module, str):
        raise KernelUnavailable(module)

    graph = layout_graph(compiled, workers, durations.compute_scale, order)
    n = compiled.n
    deterministic = durations.deterministic
    np_rng = np.random.default_rng(seed)
    order_seed = int(np_rng.integers(0, 2**63 - 1))  # the reference seeds its Python generator (order ranks) with it
    begin = np.zeros(workers, dtype=np.float64)
    hold = graph.mean_hold_s if deterministic else np.empty((workers, n), dtype=np.float64)
    for w in range(workers):
        if w == 0 or stagger_s <= 0.0:
            begin[w] = 0.0
        elif deterministic:
            begin[w] = stagger_s * w / workers
        else:
            begin[w] = float(np_rng.uniform(0.0, stagger_s))
        if not deterministic:
            hold[w] = draw_hold_s(graph, np_rng)

    codes = direction_codes(sharing, link, workers)
    overtake, group_weight, released, rank_weight = _seniority_arrays(compiled, workers, link, sharing, codes)
    # Unequal workers: each worker's step multipliers, for about twice the steps an equal worker
    # makes (fast workers make more); a run that needs more is repeated with four times as many.
    factor_columns = 2 * (measured_steps + warmup_steps) + 8
    factors = step_factors(slowdown, worker_speeds, workers, seed, factor_columns)
    # fifo or a stream cap under the random order: the rank the reference draws as each transfer joins
    # the link, for about twice the transfers of the run's steps; a run that needs more is repeated with more.
    max_streams = _stream_caps(sharing)
    draws_ranks = type(order) is RandomOrder and (type(sharing) is FifoSharing or max_streams.max() > 0)
    ranks_wanted = 2 * workers * int(graph.transfers_per_worker.sum()) * (measured_steps + warmup_steps + 2) + 64
    # Words of the reference's link generator for the overtake draws: about one join per worker,
    # step and direction, three words each; a run that needs more is repeated with four times as many.
    words_wanted = 0 if overtake.max() <= 0.0 else 6 * workers * (measured_steps + warmup_steps + 2) + 1024
    # The reference's discipline run, for its checks and parameters; an update holds the PS for
    # the step's PS op time, summed as the reference sums it.
    mean_hold = graph.mean_hold_s[0].tolist()
    update_s = sum(mean_hold[i] for i in range(n) if compiled.kind[i] == KIND_PS)
    code = discipline_code(discipline)
    run = (discipline or AsyncTraining()).new_run(workers, update_s, seed)
    may_abort = code in (DISCIPLINE_CUTOFF, DISCIPLINE_SAPS)
    # Interrupted steps leave events and zombie transfers behind: room for twice an uninterrupted
    # run's, grown when a run needs more (the link's by four: zombies pile up while it is saturated).
    heap_slack = link_slack = 2 if may_abort else 1
    histogram = _histogram_size(workers)
    generator_state = np_rng.bit_generator.state
    while True:
        link_words = _link_words(seed, words_wanted)
        rank_draws = _rank_draws(order_seed, ranks_wanted if draws_ranks else 0)
        first_hold = hold if deterministic else hold.copy()
        if factors is not None:
            first_hold = scaled_first_steps(first_hold, graph.kind, factors)
        cutoff_rng = np.random.default_rng([seed, 0xC07])  # CutoffRun's generator, drawn only by its model
        parameters = (code, workers, *_discipline_parameters(code, run, update_s), histogram)
        raw = _replay(module, graph, workers, warmup_steps, measured_steps, link, codes, max_streams, begin,
                      first_hold, deterministic, np_rng, overtake, group_weight,
                      released, rank_weight, link_words, record_steps, factors, rank_draws, parameters, may_abort,
                      cutoff_rng, heap_slack, link_slack, shared_cores)
        if raw[0] == module.STATUS_GROW_HEAP:
            heap_slack *= 2
        elif raw[0] == module.STATUS_GROW_LINK:
            link_slack *= 4
        elif raw[0] == module.STATUS_GROW_STALENESS:
            histogram *= 4
        elif raw[-1]:
            words_wanted *= 4
        elif raw[-2]:
            factor_columns *= 4
            factors = step_factors(slowdown, worker_speeds, workers, seed, factor_columns)
        elif raw[-3]:
            ranks_wanted *= 4
        else:
            return _run_result(compiled, workers, link, raw[:-3], module, run)
        np_rng.bit_generator.state = generator_state  # the repeat draws the same durations


def _histogram_size(workers: int) -> int:
    """Staleness values the histogram first holds: asynchronous workers' are about N."""
    return 8 * workers + 64


def _discipline_parameters(code: int, run: DisciplineRun, update_s: float) -> tuple[int, int, float, int, float, int]:
    """(staleness bound, R, update seconds, cutoff rule, static seconds, gradients) of a
    discipline's run, as ``discipline.discipline_new`` takes them."""
    if code in (DISCIPLINE_SSP, DISCIPLINE_SAPS):
        return run.bound, 0, update_s, 0, 0.0, 0
    if code == DISCIPLINE_SYNC:
        return 0, run.r, update_s, 0, 0.0, 0
    if code == DISCIPLINE_CUTOFF:
        assert isinstance(run, CutoffRun)
        return 0, 0, update_s, CUTOFF_RULES[run.rule.kind], run.rule.seconds, run.rule.gradients
    return 0, 0, update_s, 0, 0.0, 0


def _seniority_arrays(compiled: CompiledGraph, workers: int, link: LinkConfig, sharing: SharingModel | None,
                      codes: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For the directions the kernel's seniority state serves: each direction's overtake chance,
    as the reference's links get it (``SenioritySharing.overtake_chance`` of the time a step's
    transfers take alone), and the weights' prefix sums; then each direction's released groups
    (join window, leader's weight, whether ``sum()`` compensates; a window of 0: none) and its
    weights by rank, ``seniority ** -k`` as Python computes it. Released groups never overtake:
    the reference's group link draws nothing. A direction shared as ``fair`` (unequal interfaces:
    the reference's seniority link of weight 1) weighs every rank 1 and never overtakes."""
    compensated = 1.0 if sys.version_info >= (3, 12) else 0.0
    overtake = np.zeros(2)
    released = np.zeros((2, 3))
    released[:, 2] = compensated
    rank_weight = np.ones((2, max(workers, 1)))
    if type(sharing) is not SenioritySharing:
        return overtake, np.zeros(1), released, rank_weight
    transfer_s = (8.0 * compiled.download_bytes / link.download_payload_bps(),
                  8.0 * compiled.upload_bytes / link.upload_payload_bps())
    for d in range(2):
        if codes[d] != SHARING_SENIORITY or shares_fairly(sharing, d):
            continue
        rank_weight[d] = [sharing.seniority ** -k for k in range(workers)]
        if sharing.join_window_s > 0.0:
            released[d, :2] = sharing.join_window_s, sharing.leader_weight
        else:
            overtake[d] = sharing.overtake_chance(transfer_s[d])
    return overtake, np.array(_group_weights(sharing.seniority, workers)), released, rank_weight


def _stream_caps(sharing: SharingModel | None) -> np.ndarray:
    """Each direction's ``--max-streams`` (0: no cap); every model that takes one caps both."""
    cap = getattr(sharing, "max_streams", None) or 0
    return np.array([cap, cap], dtype=np.int64)


def _interface_arrays(link: LinkConfig, workers: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each direction's worker interface (the slowest, the reference's ``worker_capacity``, where
    they differ), each worker's (2, workers) and whether they differ, per direction."""
    caps = np.empty((2, workers))
    unequal = np.zeros(2, dtype=np.int64)
    for d, upload in enumerate((False, True)):
        own = link.worker_payload_caps(workers, upload=upload)
        unequal[d] = isinstance(own, list)
        caps[d] = own
    return caps.min(axis=1), caps, unequal


def _rank_draws(order_seed: int, count: int) -> np.ndarray | None:
    """The first ``count`` ``random()`` draws of the reference's order generator, or None for none."""
    if count <= 0:
        return None
    draw = random.Random(order_seed).random
    return np.array([draw() for _ in range(count)])


def _link_words(seed: int, count: int) -> np.ndarray:
    """The first ``count`` 32-bit outputs of the reference's link generator (``links-{seed}``)."""
    if count <= 0:
        return np.zeros(0, dtype=np.int64)
    # One call for all of them: CPython fills a wide getrandbits from the least significant 32 bits
    # up, one generator word each, in the order single calls would return them.
    bits = random.Random(f"links-{seed}").getrandbits(32 * count)
    return np.frombuffer(bits.to_bytes(4 * count, "little"), dtype="<u4").astype(np.int64)


def _replay(module: ModuleType, graph: Any, workers: int, warmup_steps: int, measured_steps: int, link: LinkConfig,
            codes: tuple[int, int], max_streams: np.ndarray, begin: np.ndarray, hold: np.ndarray, deterministic: bool,
            np_rng: np.random.Generator, overtake: np.ndarray, group_weight: np.ndarray, released: np.ndarray,
            rank_weight: np.ndarray, link_words: np.ndarray, record_steps: int, factors: np.ndarray | None,
            rank_draws: np.ndarray | None, discipline: tuple, may_abort: bool,
            cutoff_rng: np.random.Generator, heap_slack: int, link_slack: int, shared_cores: int) -> tuple:
    """One call of the compiled loop, with a fresh state of the discipline made of ``discipline``
    (``discipline_new``'s arguments); numba's own failures become ``KernelUnavailable``."""
    reverse = (link.reverse_efficiency(upload=False), link.reverse_efficiency(upload=True))
    try:
        state = module.discipline_new(*discipline)
        return module.replay(
            graph.kind, graph.succ_ptr, graph.succ_idx, graph.indegree, graph.lane, graph.lane_rank,
            graph.order_rank, graph.bits, graph.ps_gap_s, graph.sample_offset, graph.sample_count, graph.samples_us,
            graph.op_scale_s, graph.held_gap_s, graph.lane_offset, graph.lane_width, graph.ps_queue_offset,
            graph.ps_queue_capacity, graph.transfers_per_worker, graph.transfer_nodes, graph.start, graph.n_downloads,
            graph.n_worker_lanes, graph.n_ps_lanes,
            workers, warmup_steps, measured_steps * workers, link.latency_s + link.per_transfer_overhead_s,
            np.array(codes, dtype=np.int64),
            link.directions_coupled(),
            link.contention_efficiency < 1.0 or min(reverse) < 1.0, link.contention_efficiency,
            np.array([link.download_payload_bps(), link.upload_payload_bps()]),
            np.array([link.download_payload_bps_while_uploading(), link.upload_payload_bps_while_downloading()]),
            np.array(reverse),
            *_interface_arrays(link, workers),
            begin, hold, not deterministic, np_rng, overtake, group_weight, link_words, released, rank_weight,
            record_steps, graph.mean_hold_s, np.ones((1, 1)) if factors is None else factors, factors is not None,
            np.zeros(1) if rank_draws is None else rank_draws, rank_draws is not None, max_streams,
            state, may_abort, cutoff_rng, heap_slack, link_slack,
            # the request queue's [queue, upload bits admitted, upload capacity alone, growth], fresh per call
            np.array([link.request_queue_s, 0.0, link.upload_payload_bps(), link.request_queue_growth]),
            # the token bucket's [depth, bits in it each way, since when each way has been idle], fresh per call
            np.array([link.burst_payload_bits(), link.burst_payload_bits(), link.burst_payload_bits(), 0.0, 0.0]),
            shared_cores,
        )
    except Exception as exc:
        if _is_numba_error(exc):
            raise KernelUnavailable(f"numba could not compile the kernel ({type(exc).__name__}: "
                                    f"{str(exc).splitlines()[0] if str(exc) else ''})") from exc
        raise


def _is_numba_error(exc: Exception) -> bool:
    return type(exc).__module__.startswith(("numba", "llvmlite"))


def _run_result(compiled: CompiledGraph, workers: int, link: LinkConfig, raw: tuple, module: ModuleType,
                run: DisciplineRun) -> RunResult:
    """The reference's closing arithmetic on the kernel's books (lists of Python floats, summed
    with ``sum`` as the reference sums its lists). The staleness histogram is spread back into
    values: their summary depends on the values only, not on the order they came in."""
    (status, ops, t0, t1, counted, own_steps, first_end, last_end, books0, books1, accounts0, accounts1,
     histogram, in_flight, timeline) = raw
    if status == module.STATUS_TIME_OVERFLOW:
        raise time_overflow()
    if status != module.STATUS_WINDOW_CLOSED:
        if in_flight:
            # Transfers in flight whose finish is not a finite time: the clock overflowed.
            raise time_overflow()
        raise RuntimeError("replay ended before the measurement window closed")
    t0, t1 = float(t0), float(t1)
    window = t1 - t0
    own = own_steps.tolist()
    firsts = first_end.tolist()
    lasts = last_end.tolist()
    spans_resolved = all(b > a for a, b in zip(firsts, lasts, strict=True))
    if all(own) and spans_resolved:
        rate = sum(k / (b - a) for k, a, b in zip(own, firsts, lasts, strict=True))
    elif window > 0.0:
        rate = counted / window
    else:
        raise ReplayTimeOverflow("the replay's clock cannot resolve its steps (they are shorter than a float can "
                                 "tell apart at this time); check the graph's durations and the link")
    per_step = 1.0 / counted
    compute0, params0, link0, peers0 = (row.tolist() for row in accounts0)
    compute1, params1, link1, peers1 = (row.tolist() for row in accounts1)
    served0, served1 = books0.tolist(), books1.tolist()
    counts0, counts1 = tuple(int(c) for c in served0[3:6]), tuple(int(c) for c in served1[3:6])
    staleness = np.repeat(np.arange(histogram.shape[0]), histogram).tolist()
    return RunResult(
        workers=workers,
        steps_per_second=rate,
        measured_steps=int(counted),
        window_s=window,
        step_time_s=workers * window / counted,
        compute_s=(sum(compute1) - sum(compute0)) * per_step,
        waiting_for_parameters_s=(sum(params1) - sum(params0)) * per_step,
        waiting_for_link_s=(sum(link1) - sum(link0)) * per_step,
        waiting_for_peers_s=(sum(peers1) - sum(peers0)) * per_step,
        **update_rates(counts0, counts1, window, rate, run.one_update_per_step),
        **staleness_summary(staleness),
        worker_compute_share=tuple((b - a) / window for a, b in zip(compute0, compute1, strict=True)),
        worker_waiting_for_peers_share=tuple((b - a) / window for a, b in zip(peers0, peers1, strict=True)),
        downlink_utilization=(served1[0] - served0[0]) / (link.download_payload_bps() * window),
        uplink_utilization=(served1[1] - served0[1]) / (link.upload_payload_bps() * window),
        ps_utilization=min(1.0, (served1[2] - served0[2]) / (compiled.n_ps_lanes * window)),
        simulated_ops=int(ops),
        end_time_s=t1,
        timeline=timeline_record(timeline) if timeline[0][C_RECORD_STEPS] else None,
    )

