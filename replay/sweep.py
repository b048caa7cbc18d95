"""Sweeps: replay a step graph for several worker counts and seeds, and summarize each point.

``predict_throughput`` is the narrow function a validator calls: graph, worker counts, link,
policies in; one ``Point`` per worker count out. ``predict`` adds what a report needs (the
calibration, bounds, the configuration). Independent (workers, seed) replays run in parallel
processes when ``jobs`` > 1. Nothing here writes files.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import signal
import statistics
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from typing import Any

from replay.calibration import Calibration, calibrate_compute_scale
from replay.engine.compiled import CompiledGraph, compile_graph
from replay.engine.kernel import (
    KernelUnavailable,
    compile_kernel,
    kernel_unavailable,
    simulate_fast,
    unsupported_setting,
)
from replay.engine.link import LinkConfig, profiled_link
from replay.engine.loop import DurationModel, ReplayTimeOverflow, RunResult, one_step_time_s, simulate
from replay.engine.order import OrderPolicy, order_policy
from replay.engine.sharing import (
    DEFAULT_JOIN_WINDOW_S,
    DEFAULT_LEADER_WEIGHT,
    DEFAULT_SHARING,
    SenioritySharing,
    SharingModel,
    sharing_model,
)
from replay.engine.slowdown import check_worker_speeds, parse_slowdown
from replay.sync.disciplines import SyncDiscipline, sync_discipline
from tracetool.errors import ToolError
from tracetool.graph.stepgraph import StepGraph

# Measured in docs/replay.md ("How many steps"): with 2 warm-up steps per worker, 40 measured
# steps per worker keep the seed-to-seed spread of steps/s within about 1% on the zoo graphs.
DEFAULT_MEASURED_STEPS = 40
DEFAULT_WARMUP_STEPS = 2
DEFAULT_SEEDS = 5

# The most workers a replay accepts. The engine allocates per-worker state up front, so a count
# far beyond this fails with MemoryError or OverflowError, not a message. Every sharing model has
# been run at this count (docs/replay.md, "Many workers"); past it nobody has checked its numbers.
MAX_REPLAY_WORKERS = 4096
# The most ops one sweep may replay: about 2 hours on one core at the engine's typical speed.
MAX_SIMULATED_OPS = 10**9
ENGINE_OPS_PER_SECOND = 150_000
# The event loops a sweep may use (ReplaySettings.engine).
ENGINES = ("auto", "python", "compiled")
MAX_SHARED_CORES = 4096


@dataclass(frozen=True)
class Point:
    """Predicted throughput of one worker count; spreads are over seeds."""

    workers: int
    steps_per_second: float
    steps_per_second_std: float
    steps_per_second_min: float
    steps_per_second_max: float
    examples_per_second: float
    examples_per_second_std: float
    examples_per_second_min: float
    examples_per_second_max: float
    step_time_s: float
    compute_s: float
    waiting_for_parameters_s: float
    waiting_for_link_s: float
    waiting_for_peers_s: float
    updates_per_second: float
    gradients_applied_per_second: float
    gradients_dropped_per_second: float
    staleness_mean: float
    staleness_p99: float
    staleness_max: int
    staleness_counts: tuple[int, ...]  # over every seed: applied gradients of staleness 0, 1, ...
    worker_compute_share: tuple[float, ...]  # per worker, share of the window spent computing
    worker_waiting_for_peers_share: tuple[float, ...]  # per worker, share held back by the discipline
    downlink_utilization: float
    uplink_utilization: float
    ps_utilization: float
    seeds: int
    measured_steps: int
    simulated_ops: int
    wall_time_s: float


@dataclass(frozen=True)
class ReplaySettings:
    """How replays are run; everything except the graph, the worker counts and the link."""

    sharing: str = DEFAULT_SHARING
    order: str = "trace"
    max_streams: int | None = None
    seniority: float | None = None  # with sharing "seniority"; None: the measured default
    overtake: float | None = None  # with sharing "seniority"; None: the measured default
    overtake_time_s: float | None = None  # with sharing "seniority"; None: the measured default; inf: constant
    # With sharing "seniority": connections joining within this many seconds form a released group
    # (0: none) whose first joiner weighs leader_weight; None: the measured defaults for disciplines
    # whose updates release workers together (sync, backup, cutoff), none for the others.
    join_window_s: float | None = None
    leader_weight: float | None = None
    measured_steps: int = DEFAULT_MEASURED_STEPS
    warmup_steps: int = DEFAULT_WARMUP_STEPS
    seeds: int = DEFAULT_SEEDS
    seed: int = 0
    # Mean op durations and evenly spread start offsets instead of draws. The overtake draws of
    # seniority sharing and a random transfer order stay random: see ``varies_with_seed``.
    deterministic: bool = False
    jobs: int = 1
    calibrate: bool = True
    # Unequal workers (replay.engine.slowdown): the first workers' compute speeds relative to the
    # profiled worker, and a process of per-step slowdowns ("none", "lognormal:0.3", ...).
    worker_speeds: tuple[float, ...] = ()
    slowdown: str = "none"
    # Cores every worker's compute shares (replay.engine.cores), as when a validation runs all the
    # workers on one machine; 0: each worker on a machine of its own, as in a real cluster.
    shared_cores: int = 0
    # How workers coordinate (replay.sync.disciplines): "async", "ssp" or "saps" with a staleness
    # bound, "sync" or "backup" with R, "cutoff" with a cutoff rule.
    sync: str = "async"
    staleness: int | None = None
    replicas_to_aggregate: int | None = None  # sync / backup: R (default N, or N - 1 for backup)
    cutoff: str | None = None  # cutoff: "static:SECONDS", "gradients:R" or "dynamic"
    link_profile: str = ""  # the link profile the sharing parameters came from, if any
    # where the seniority sharing parameters came from: "defaults", "given" (options), "link profile"
    # (its join trials) or "link profile step fits" (its efficiencies; the law the defaults)
    sharing_source: str = "defaults"
    # Which event loop replays: "auto" (the compiled kernel where it holds the configuration and
    # numba runs, else the Python engine), "python" (the reference) or "compiled" (the kernel or an error).
    engine: str = "auto"

    def discipline(self) -> SyncDiscipline:
        return sync_discipline(self.sync, self.staleness, self.replicas_to_aggregate, self.cutoff)


@dataclass(frozen=True)
class Prediction:
    """A whole prediction: configuration, calibration, bounds and points."""

    model: dict[str, Any]
    link: LinkConfig
    settings: ReplaySettings
    calibration: Calibration
    batch_size: int
    download_bytes_per_step: int
    upload_bytes_per_step: int
    link_bound_steps_per_second: float
    one_worker_steps_per_second: float
    points: list[Point]
    wall_time_s: float
    method: str = "replay"  # or "analytic": mean value analysis (replay.analytic)

    def to_json_dict(self) -> dict[str, Any]:
        model = {k: v for k, v in self.model.items() if k not in ("untraced_step_time_s", "traced_step_time_s")}
        for key in ("untraced_step_time_s", "traced_step_time_s"):
            facts = self.model.get(key)
            if isinstance(facts, dict):
                model[key] = {k: v for k, v in facts.items() if k != "samples"}
        return {
            "method": self.method,
            "model": model,
            "link": asdict(self.link),
            "settings": {
                **_finite_settings(asdict(self.settings)),
                "varies_with_seed": varies_with_seed(self.settings),
            },
            "calibration": self.calibration.to_json_dict(),
            "batch_size": self.batch_size,
            "download_bytes_per_step": self.download_bytes_per_step,
            "upload_bytes_per_step": self.upload_bytes_per_step,
            "link_bound_steps_per_second": self.link_bound_steps_per_second,
            "one_worker_steps_per_second": self.one_worker_steps_per_second,
            "wall_time_s": self.wall_time_s,
            "points": [asdict(p) for p in self.points],
        }


def varies_with_seed(settings: ReplaySettings) -> list[str]:
    """What differs between the seeds of a point under ``settings``: empty when every seed
    replays the same run, so the spread over seeds is zero.

    ``deterministic`` fixes what is sampling noise of the profile: op durations (their means,
    not draws from the samples) and the workers' start offsets (evenly spread over one step,
    not drawn). It keeps the overtake draws of ``seniority`` sharing: whether a joining
    connection overtakes the incumbents decides whether workers settle into a pipeline or
    keep bunching, both real outcomes of one cluster (docs/replay.md), so their spread is the
    model's honest uncertainty, not noise to average away. ``overtake = 0`` removes them."""
    varies = [] if settings.deterministic else ["op durations", "start offsets"]
    if settings.sharing == "seniority" and settings.overtake != 0.0 and not settings.join_window_s:
        varies.append("overtake draws")  # None: the default chance, which is positive
    if settings.order == "random":
        varies.append("transfer order")
    if parse_slowdown(settings.slowdown).kind in ("lognormal", "exponential", "straggler", "persistent"):
        varies.append("slowdown draws")
    if settings.sync == "cutoff" and settings.cutoff == "dynamic":
        varies.append("run-time model draws")
    return varies


def _finite_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """JSON has no infinity: a constant overtake chance is written as "inf"."""
    return {k: ("inf" if isinstance(v, float) and math.isinf(v) else v) for k, v in settings.items()}


def released_groups(settings: ReplaySettings) -> tuple[float | None, float | None]:
    """The join window and leader weight of seniority sharing under ``settings``: as given, else
    the measured defaults where the discipline's updates release workers together."""
    window, leader = settings.join_window_s, settings.leader_weight
    if settings.sharing != "seniority" or not settings.discipline().releases_together:
        return window, leader
    return (DEFAULT_JOIN_WINDOW_S if window is None else window,
            DEFAULT_LEADER_WEIGHT if leader is None else leader)


def link_bound_steps_per_second(compiled: CompiledGraph, link: LinkConfig) -> float:
    """Steps/s at which one direction of the PS interface is busy all the time."""
    bounds = []
    if compiled.download_bytes > 0:
        bounds.append(link.download_payload_bps() / (8.0 * compiled.download_bytes))
    if compiled.upload_bytes > 0:
        bounds.append(link.upload_payload_bps() / (8.0 * compiled.upload_bytes))
    return min(bounds) if bounds else math.inf


def check_workers(workers: list[int]) -> list[int]:
    """The distinct worker counts in ascending order; refuses counts below 1 or above
    ``MAX_REPLAY_WORKERS`` before anything is allocated for them."""
    if not workers:
        raise ToolError("give at least one worker count")
    for n in workers:
        if n < 1:
            raise ToolError(f"worker counts must be at least 1, got {n}")
    largest = max(workers)  # the one to name when a range such as 1-5000 passes the limit
    if largest > MAX_REPLAY_WORKERS:
        raise ToolError(f"--workers {largest} is above the replay's limit of {MAX_REPLAY_WORKERS} workers")
    return sorted(set(workers))


# Per-process state of the pool: the run inputs are sent once per process, not per task.
_POOL_STATE: dict[str, Any] = {}


def _pool_init(state: dict[str, Any]) -> None:
    # A forked process inherits the command's SIGTERM-as-Ctrl-C handler; a pool process must
    # simply end when the command terminates it.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _POOL_STATE.clear()
    _POOL_STATE.update(state)


def _run_one(task: tuple[int, int]) -> tuple[int, int, RunResult, float]:
    workers, seed = task
    began = time.perf_counter()
    result, _ = replay_once(_POOL_STATE, workers, seed)
    return workers, seed, result, time.perf_counter() - began


def replay_once(s: dict[str, Any], workers: int, seed: int) -> tuple[RunResult, str]:
    """One replay of a prepared state on the kernel where it holds it, else the Python engine;
    returns the result and the engine that ran it ("compiled" or "python")."""
    if s["engine"] != "python" and _kernel_gap(s) is None:
        try:
            return _replay_with(simulate_fast, s, workers, seed), "compiled"
        except KernelUnavailable as exc:  # "auto" only: "compiled" was tried in the main process first
            _engine_notice(str(exc))
            s["engine"] = "python"
    return _replay_with(simulate, s, workers, seed), "python"


def _replay_with(engine: Any, s: dict[str, Any], workers: int, seed: int) -> RunResult:
    return engine(
        s["compiled"],
        workers,
        s["link"].for_workers(workers),
        sharing=s["sharing"],
        order=s["order"],
        durations=s["durations"],
        measured_steps=s["measured_steps"],
        warmup_steps=s["warmup_steps"],
        seed=seed,
        stagger_s=s["stagger_s"],
        slowdown=s["slowdown"],
        worker_speeds=s["worker_speeds"],
        discipline=s["discipline"],
        shared_cores=s["shared_cores"],
    )


def _kernel_gap(s: dict[str, Any]) -> str | None:
    """The setting that keeps this replay off the compiled kernel, or None."""
    return unsupported_setting(sharing=s["sharing"], order=s["order"], discipline=s["discipline"], link=s["link"],
                               compiled=s["compiled"])


_NOTICES: set[str] = set()


def _engine_notice(reason: str) -> None:
    """Say once per process, in one line, that the Python engine replays instead of the kernel."""
    if not _NOTICES:
        print(f"notice: the compiled replay kernel is unavailable ({reason}); replaying with the Python engine",
              file=sys.stderr)
    _NOTICES.add(reason)


def _choose_engine(state: dict[str, Any], workers: list[int], engine: str) -> str:
    """The sweep's engine: "python", or the kernel compiled (or loaded from numba's cache) here,
    before any pool process starts, so that they inherit it instead of each compiling it.
    "compiled" refuses, in one line, a configuration or a machine the kernel cannot serve."""
    if engine == "python":
        return engine
    missing = _kernel_gap(state)
    if engine == "compiled" and missing is not None:
        raise ToolError(f"--engine compiled: {missing} is not in the compiled kernel yet; use --engine auto to replay "
                        "it with the Python engine")
    if missing is not None:
        return "python"
    reason = compile_kernel(state["compiled"], min(workers), state["link"], sharing=state["sharing"],
                            order=state["order"])
    if reason is None:
        return engine
    if engine == "compiled":
        raise ToolError(f"--engine compiled: {reason}")
    _engine_notice(reason)
    return "python"


def _summarize(workers: int, runs: list[RunResult], batch_size: int, wall_s: float) -> Point:
    rates = [r.steps_per_second for r in runs]
    # The mean of equal rates can lie an ulp outside them (fmean divides their rounded sum by the
    # count: five seeds at 0.8765145576561836 give ...835); readers and the plot's error bars
    # expect min <= mean <= max.
    mean = min(max(statistics.fmean(rates), min(rates)), max(rates))
    std = statistics.stdev(rates) if len(rates) > 1 else 0.0

    def avg(name: str) -> float:
        return statistics.fmean(getattr(r, name) for r in runs)

    return Point(
        workers=workers,
        steps_per_second=mean,
        steps_per_second_std=std,
        steps_per_second_min=min(rates),
        steps_per_second_max=max(rates),
        examples_per_second=mean * batch_size,
        examples_per_second_std=std * batch_size,
        examples_per_second_min=min(rates) * batch_size,
        examples_per_second_max=max(rates) * batch_size,
        step_time_s=avg("step_time_s"),
        compute_s=avg("compute_s"),
        waiting_for_parameters_s=avg("waiting_for_parameters_s"),
        waiting_for_link_s=avg("waiting_for_link_s"),
        waiting_for_peers_s=avg("waiting_for_peers_s"),
        updates_per_second=avg("updates_per_second"),
        gradients_applied_per_second=avg("gradients_applied_per_second"),
        gradients_dropped_per_second=avg("gradients_dropped_per_second"),
        staleness_mean=avg("staleness_mean"),
        staleness_p99=avg("staleness_p99"),
        staleness_max=max(r.staleness_max for r in runs),
        staleness_counts=_summed_counts([r.staleness_counts for r in runs]),
        worker_compute_share=_per_worker_means([r.worker_compute_share for r in runs]),
        worker_waiting_for_peers_share=_per_worker_means([r.worker_waiting_for_peers_share for r in runs]),
        downlink_utilization=avg("downlink_utilization"),
        uplink_utilization=avg("uplink_utilization"),
        ps_utilization=avg("ps_utilization"),
        seeds=len(runs),
        measured_steps=round(avg("measured_steps")),
        simulated_ops=sum(r.simulated_ops for r in runs),
        wall_time_s=wall_s,
    )


def _summed_counts(per_run: list[tuple[int, ...]]) -> tuple[int, ...]:
    """Histograms of different lengths added bin by bin."""
    width = max((len(c) for c in per_run), default=0)
    return tuple(sum(c[k] for c in per_run if k < len(c)) for k in range(width))


def _per_worker_means(per_run: list[tuple[float, ...]]) -> tuple[float, ...]:
    """Each worker's mean over seeds (every run of a point has the same workers)."""
    return tuple(statistics.fmean(values) for values in zip(*per_run, strict=True))


def run_sweep(
    compiled: CompiledGraph,
    workers: list[int],
    link: LinkConfig,
    sharing: SharingModel,
    order: OrderPolicy,
    durations: DurationModel,
    settings: ReplaySettings,
    batch_size: int,
    stagger_s: float,
) -> list[Point]:
    """Replay every (worker count, seed) pair, in parallel when settings.jobs > 1."""
    state = {
        "compiled": compiled,
        "link": link,
        "sharing": sharing,
        "order": order,
        "durations": durations,
        "measured_steps": settings.measured_steps,
        "warmup_steps": settings.warmup_steps,
        "stagger_s": stagger_s,
        "slowdown": parse_slowdown(settings.slowdown),
        "worker_speeds": tuple(settings.worker_speeds),
        "discipline": settings.discipline(),
        "shared_cores": settings.shared_cores,
    }
    state["engine"] = _choose_engine(state, workers, settings.engine)
    # Largest worker counts first: they take longest, so the pool stays balanced.
    tasks = [(n, settings.seed + k) for n in sorted(workers, reverse=True) for k in range(settings.seeds)]
    jobs = max(1, min(settings.jobs, len(tasks)))
    if jobs == 1:
        _pool_init(state)
        outcomes = [_run_one(task) for task in tasks]
    else:
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        pool = ProcessPoolExecutor(
            max_workers=jobs, mp_context=multiprocessing.get_context(method), initializer=_pool_init, initargs=(state,)
        )
        try:
            outcomes = list(pool.map(_run_one, tasks))
        except BaseException:
            # Interrupted or failed: end the pool's processes now rather than let them finish the sweep.
            for process in list(getattr(pool, "_processes", {}).values()):
                process.terminate()
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown()
    by_workers: dict[int, list[tuple[int, RunResult, float]]] = {}
    for n, seed, result, wall in outcomes:
        by_workers.setdefault(n, []).append((seed, result, wall))
    points = []
    for n in sorted(by_workers):
        runs = [r for _, r, _ in sorted(by_workers[n], key=lambda item: item[0])]
        points.append(_summarize(n, runs, batch_size, sum(w for _, _, w in by_workers[n])))
    return points


def default_jobs() -> int:
    return max(1, min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1, 8))


def check_settings(settings: ReplaySettings) -> None:
    """Refuse settings no replay can run with, as a one-line error naming the option, before any
    replay starts (a negative seed would otherwise fail deep inside numpy, and ``jobs`` below 1
    would silently mean one process)."""
    if settings.measured_steps < 1:
        raise ToolError(f"--steps must be at least 1, got {settings.measured_steps}")
    if settings.warmup_steps < 0:
        raise ToolError(f"--warmup must be zero or more, got {settings.warmup_steps}")
    if settings.seeds < 1:
        raise ToolError(f"--seeds must be at least 1, got {settings.seeds}")
    if settings.seed < 0:
        raise ToolError(f"--seed must be zero or more, got {settings.seed}")
    if settings.jobs < 1:
        raise ToolError(f"--jobs must be at least 1, got {settings.jobs}")
    if settings.max_streams is not None and settings.max_streams < 1:
        raise ToolError(f"--max-streams must be at least 1, got {settings.max_streams}")
    if settings.engine not in ENGINES:
        raise ToolError(f"--engine must be one of {', '.join(ENGINES)}, got {settings.engine!r}")
    check_worker_speeds(tuple(settings.worker_speeds))
    parse_slowdown(settings.slowdown)
    settings.discipline()
    if not 0 <= settings.shared_cores <= MAX_SHARED_CORES:
        raise ToolError(f"--shared-cores must be between 0 (each worker on its own machine) and {MAX_SHARED_CORES}, "
                        f"got {settings.shared_cores}")
    if settings.shared_cores and settings.discipline().interrupts_steps:
        raise ToolError(f"--shared-cores is not replayed with --sync {settings.sync}, which interrupts steps: its "
                        "abandoned compute would stay on the cores")


def check_discipline(workers: list[int], settings: ReplaySettings) -> None:
    """Backup workers need R below every worker count replayed (above one)."""
    discipline = settings.discipline()
    for n in workers:
        discipline.new_run(n, 0.0)


def check_unequal_workers(workers: list[int], settings: ReplaySettings) -> None:
    """A step-times trace must cover every worker of the largest count replayed."""
    spec = parse_slowdown(settings.slowdown)
    if spec.kind == "trace" and max(workers) > len(spec.step_times_s):
        raise ToolError(f"--slowdown {settings.slowdown}: the file has step times of {len(spec.step_times_s)} "
                        f"workers, not of all {max(workers)}; measure as many workers or replay fewer")


def estimated_simulated_ops(n_nodes: int, workers: list[int], settings: ReplaySettings) -> int:
    """Ops a sweep replays: every worker runs its warm-up and measured steps, once per seed."""
    return n_nodes * sum(workers) * (settings.warmup_steps + settings.measured_steps) * settings.seeds


def check_sweep_size(n_nodes: int, workers: list[int], settings: ReplaySettings) -> None:
    """Refuse a sweep that would run for hours with no end in sight (``--steps 10**9``, ``--seeds 10**8``).

    The pure-Python engine replays 40,000 to 180,000 ops per second and core (docs/replay.md,
    "Speed"); past ``MAX_SIMULATED_OPS`` a sweep takes hours even on every core."""
    ops = estimated_simulated_ops(n_nodes, workers, settings)
    if ops > MAX_SIMULATED_OPS:
        hours = ops / ENGINE_OPS_PER_SECOND / max(1, settings.jobs) / 3600
        raise ToolError(
            f"this sweep would replay about {ops:.2g} ops ({n_nodes} per step x workers x steps x {settings.seeds} "
            f"seeds), some {hours:.0f} hours at {ENGINE_OPS_PER_SECOND:,} ops/s per job; the limit is "
            f"{MAX_SIMULATED_OPS:.0e}: lower --steps, --seeds or the worker counts"
        )


def prepare(
    graph: StepGraph, link: LinkConfig | None, settings: ReplaySettings
) -> tuple[CompiledGraph, LinkConfig, SharingModel, OrderPolicy, Calibration]:
    """The compiled graph, the link, the engine's policies and the calibration a prediction uses."""
    check_settings(settings)
    try:
        sharing = sharing_model(settings.sharing, settings.max_streams, settings.seniority, settings.overtake,
                                settings.overtake_time_s, *released_groups(settings))
        order = order_policy(settings.order)
    except ValueError as exc:
        raise ToolError(str(exc)) from None
    compiled = compile_graph(graph)
    link = link or profiled_link(graph)
    if settings.calibrate:
        calibration = calibrate_compute_scale(compiled, graph.model, profiled_link(graph), sharing, order)
    else:
        unscaled = one_step_time_s(compiled, profiled_link(graph), sharing=sharing, order=order)
        calibration = Calibration(
            1.0, None, unscaled, unscaled, 1, "calibration switched off; durations used as traced"
        )
    return compiled, link, sharing, order, calibration


def predict_throughput(
    graph: StepGraph,
    workers: list[int],
    link: LinkConfig | None = None,
    settings: ReplaySettings = ReplaySettings(),
) -> list[Point]:
    """Predicted throughput of ``graph`` for each worker count on ``link`` (default: the profiled link)."""
    return predict(graph, workers, link, settings).points


def predict(
    graph: StepGraph,
    workers: list[int],
    link: LinkConfig | None = None,
    settings: ReplaySettings = ReplaySettings(),
) -> Prediction:
    """Calibrate, then replay every worker count; see ``predict_throughput`` for the short form."""
    began = time.perf_counter()
    workers = check_workers(list(workers))
    check_settings(settings)
    check_unequal_workers(workers, settings)
    check_discipline(workers, settings)
    check_sweep_size(len(graph.nodes), workers, settings)
    with _overflow_is_user_error():
        return _predict(graph, workers, link, settings, began)


def _predict(
    graph: StepGraph, workers: list[int], link: LinkConfig | None, settings: ReplaySettings, began: float
) -> Prediction:
    compiled, link, sharing, order, calibration = prepare(graph, link, settings)
    if isinstance(sharing, SenioritySharing):
        # record the values used, not "default"
        settings = replace(settings, seniority=sharing.seniority, overtake=sharing.overtake,
                           overtake_time_s=sharing.overtake_time_s, join_window_s=sharing.join_window_s,
                           leader_weight=sharing.leader_weight)
    durations = DurationModel(compute_scale=calibration.compute_scale, deterministic=settings.deterministic)
    one_step = one_step_time_s(compiled, link, sharing=sharing, order=order, compute_scale=calibration.compute_scale)
    batch_size = int(graph.model.get("batch_size") or 0)
    points = run_sweep(compiled, workers, link, sharing, order, durations, settings, batch_size, one_step)
    return Prediction(
        model=dict(graph.model),
        link=link,
        settings=settings,
        calibration=calibration,
        batch_size=batch_size,
        download_bytes_per_step=compiled.download_bytes,
        upload_bytes_per_step=compiled.upload_bytes,
        link_bound_steps_per_second=link_bound_steps_per_second(compiled, link),
        one_worker_steps_per_second=1.0 / one_step if one_step > 0 else math.inf,
        points=points,
        wall_time_s=time.perf_counter() - began,
    )


def record_timeline(
    graph: StepGraph,
    workers: int,
    link: LinkConfig | None = None,
    settings: ReplaySettings = ReplaySettings(),
    steps: int = 3,
    calibration: Calibration | None = None,
) -> tuple[RunResult, CompiledGraph, LinkConfig]:
    """Replay the first ``steps`` steps of every worker and keep what happened, for a timeline."""
    with _overflow_is_user_error():
        return _record_timeline(graph, workers, link, settings, steps, calibration)


def _record_timeline(
    graph: StepGraph, workers: int, link: LinkConfig | None, settings: ReplaySettings, steps: int,
    calibration: Calibration | None,
) -> tuple[RunResult, CompiledGraph, LinkConfig]:
    compiled, link, sharing, order, found = prepare(
        graph, link, settings if calibration is None else _no_cal(settings)
    )
    calibration = calibration or found
    link = link.for_workers(workers)
    one_step = one_step_time_s(compiled, link, sharing=sharing, order=order, compute_scale=calibration.compute_scale)
    run = dict(
        sharing=sharing,
        order=order,
        durations=DurationModel(calibration.compute_scale, settings.deterministic),
        # Run past the recorded steps so that every worker, not just the fastest, completes them.
        measured_steps=2 * steps + 1,
        warmup_steps=0,
        seed=settings.seed,
        record_steps=steps,
        stagger_s=one_step,
        slowdown=parse_slowdown(settings.slowdown),
        worker_speeds=tuple(settings.worker_speeds),
        discipline=settings.discipline(),
        shared_cores=settings.shared_cores,
    )
    if (settings.engine != "python" and kernel_unavailable() is None
            and unsupported_setting(sharing=sharing, order=order, discipline=run["discipline"]) is None):
        try:  # the same record as the Python engine's (tests/replay/engine/test_kernel_timeline.py)
            return simulate_fast(compiled, workers, link, **run), compiled, link
        except KernelUnavailable as exc:
            _engine_notice(str(exc))
    return simulate(compiled, workers, link, **run), compiled, link


@contextmanager
def _overflow_is_user_error() -> Iterator[None]:
    """Times that overflow come from the link the user gave (a bandwidth of 1e-300 bit/s, a
    latency of 1e308 s), not from a defect: report them as a one-line error."""
    try:
        yield
    except ReplayTimeOverflow as exc:
        raise ToolError(str(exc)) from None


def _no_cal(settings: ReplaySettings) -> ReplaySettings:
    return ReplaySettings(**{**asdict(settings), "calibrate": False})
