"""``replay sweep``: a grid of graphs x bandwidths x disciplines x worker counts x seeds, one replay per cell.

What-if studies (which cluster to rent, which discipline, how far the PS link carries) ask for
the same prediction over many settings. Every cell of the grid is one replay of one graph for one
worker count and one seed, independent of the others, so the cells run as joblib tasks: local
processes by default, and the same code on the workers of a Dask or Ray cluster with
``--backend dask|ray``. A worker process prepares a (graph, bandwidth, discipline) case once,
calibration included, and keeps it for the cells of that case it is given.

The result is one tidy table, a row per cell, written as CSV and JSON; a summary over seeds is
printed.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from replay.engine.link import target_link
from replay.engine.loop import DurationModel, one_step_time_s
from replay.engine.slowdown import parse_slowdown
from replay.sweep import (
    ReplaySettings,
    _choose_engine,
    check_settings,
    check_sweep_size,
    check_workers,
    prepare,
    replay_once,
)
from tracetool.atomic_files import write_text_atomically
from tracetool.errors import ToolError
from tracetool.graph.stepgraph import load_stepgraph
from tracetool.outputs import check_output_folder, output_folder
from tracetool.progress import StepProgress

BACKENDS = ("local", "dask", "ray")
COLUMNS = (
    "graph", "model", "bandwidth_bps", "discipline", "workers", "seed", "steps_per_second", "examples_per_second",
    "updates_per_second", "gradients_applied_per_second", "step_time_s", "waiting_for_parameters_s",
    "downlink_utilization", "uplink_utilization", "ps_utilization", "staleness_mean", "engine", "simulated_ops",
    "wall_time_s",
)


@dataclass(frozen=True)
class GridCase:
    """What the cells of one (graph, bandwidth, discipline) share."""

    graph_path: str
    bandwidth_bps: float | None  # None: the profiled link
    discipline: str  # the label the rows carry
    settings: ReplaySettings
    link: tuple[tuple[str, Any], ...]  # the other keyword arguments of target_link


@dataclass(frozen=True)
class SweepRequest:
    graphs: list[Path]
    bandwidths_bps: list[float | None]
    disciplines: list[tuple[str, ReplaySettings]]  # (label, settings)
    workers: list[int]
    link: dict[str, Any]  # target_link's keyword arguments besides the bandwidth
    out_dir: Path
    jobs: int
    backend: str = "local"
    address: str = ""  # the Dask scheduler or Ray cluster; "": start one on this machine


@dataclass(frozen=True)
class SweepOutcome:
    rows: list[dict[str, Any]]
    table: str
    files: list[Path]


# Per process: the prepared cases, so that a worker calibrates each case once, not once per cell.
_PREPARED: dict[GridCase, dict[str, Any]] = {}


def _prepared(case: GridCase) -> dict[str, Any]:
    state = _PREPARED.get(case)
    if state is None:
        graph = load_stepgraph(case.graph_path)
        link = target_link(graph, case.bandwidth_bps, **dict(case.link))
        compiled, link, sharing, order, calibration = prepare(graph, link, case.settings)
        settings = case.settings
        state = {
            "compiled": compiled, "link": link, "sharing": sharing, "order": order,
            "durations": DurationModel(calibration.compute_scale, settings.deterministic),
            "measured_steps": settings.measured_steps, "warmup_steps": settings.warmup_steps,
            "stagger_s": one_step_time_s(compiled, link, sharing=sharing, order=order,
                                         compute_scale=calibration.compute_scale),
            "slowdown": parse_slowdown(settings.slowdown), "worker_speeds": tuple(settings.worker_speeds),
            "discipline": settings.discipline(), "shared_cores": settings.shared_cores,
            "model": str(graph.model.get("name", "")),
            "batch_size": int(graph.model.get("batch_size") or 0),
        }
        state["engine"] = _choose_engine(state, [1], settings.engine)
        _PREPARED[case] = state
    return state


def run_cell(case: GridCase, workers: int, seed: int) -> dict[str, Any]:
    """One replay of the grid: ``case``'s graph, link and discipline, ``workers`` workers, ``seed``."""
    s = _prepared(case)
    began = time.perf_counter()
    result, engine = replay_once(s, workers, seed)
    return {
        "graph": case.graph_path, "model": s["model"],
        "bandwidth_bps": case.bandwidth_bps if case.bandwidth_bps is not None else "profiled",
        "discipline": case.discipline, "workers": workers, "seed": seed,
        "steps_per_second": result.steps_per_second,
        "examples_per_second": result.steps_per_second * s["batch_size"],
        "updates_per_second": result.updates_per_second,
        "gradients_applied_per_second": result.gradients_applied_per_second,
        "step_time_s": result.step_time_s, "waiting_for_parameters_s": result.waiting_for_parameters_s,
        "downlink_utilization": result.downlink_utilization, "uplink_utilization": result.uplink_utilization,
        "ps_utilization": result.ps_utilization, "staleness_mean": result.staleness_mean,
        "engine": engine, "simulated_ops": result.simulated_ops,
        "wall_time_s": time.perf_counter() - began,
    }


def grid_cases(request: SweepRequest) -> list[GridCase]:
    link = tuple(sorted(request.link.items()))
    return [GridCase(str(graph), bandwidth, label, settings, link)
            for graph in request.graphs for bandwidth in request.bandwidths_bps
            for label, settings in request.disciplines]


def _check(request: SweepRequest, cases: list[GridCase]) -> list[int]:
    """Refuse, before anything runs, what would fail or not fit: bad settings, missing graphs, an
    unknown backend, a grid too large, an output folder that is not the sweep's."""
    workers = check_workers(request.workers)
    if request.backend not in BACKENDS:
        raise ToolError(f"--backend {request.backend}: choose among {', '.join(BACKENDS)}")
    if request.jobs < 1:
        raise ToolError(f"--jobs must be at least 1, got {request.jobs}")
    for _, settings in request.disciplines:
        check_settings(settings)
    for graph in request.graphs:
        loaded = load_stepgraph(graph)  # a missing or corrupt graph is refused in one line here
        for _, settings in request.disciplines:
            check_sweep_size(len(loaded.nodes), workers, settings)
    check_output_folder(request.out_dir)
    for case in cases[:1]:
        target_link(load_stepgraph(case.graph_path), case.bandwidth_bps, **dict(case.link))
    return workers


@contextmanager
def _backend(name: str, address: str, jobs: int) -> Iterator[None]:
    """joblib's backend for the sweep: local processes, or a Dask or Ray cluster (started here,
    on this machine, when no address is given, and stopped afterwards)."""
    import joblib

    if name == "local":
        with joblib.parallel_config(backend="loky", n_jobs=jobs):
            yield
        return
    if name == "dask":
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError:
            raise ToolError("--backend dask needs Dask: pip install 'tfsim[dask]'") from None
        cluster = None if address else LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True,
                                                    dashboard_address=None)
        client = Client(address or cluster)
        try:
            with joblib.parallel_config(backend="dask", n_jobs=-1):
                yield
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
        return
    try:
        import ray
        from ray.util.joblib import register_ray
    except ImportError:
        raise ToolError("--backend ray needs Ray: pip install 'tfsim[ray]'") from None
    register_ray()
    ray.init(address=address or None, num_cpus=None if address else jobs, include_dashboard=False,
             log_to_driver=False)
    try:
        with joblib.parallel_config(backend="ray", n_jobs=-1):
            yield
    finally:
        ray.shutdown()


def run_grid(request: SweepRequest, progress: bool = True) -> SweepOutcome:
    """Replay every cell of the grid and write DIR/sweep.csv and DIR/sweep.json."""
    import joblib

    cases = grid_cases(request)
    workers = _check(request, cases)
    seeds = [request.disciplines[0][1].seed + k for k in range(request.disciplines[0][1].seeds)]
    # Largest worker counts first: they take longest, so the workers stay busy to the end.
    cells = [(case, n, seed) for n in sorted(workers, reverse=True) for case in cases for seed in seeds]
    rows = []
    with _backend(request.backend, request.address, request.jobs), \
            StepProgress(len(cells), "sweep", enabled=progress, unit="replay") as bar:
        phase = f"on {request.backend} ({request.jobs} jobs)"
        bar.update(0, phase)
        results = joblib.Parallel(return_as="generator_unordered")(
            joblib.delayed(run_cell)(case, n, seed) for case, n, seed in cells)
        for row in results:
            rows.append(row)
            bar.update(len(rows), phase)
    order = {(c.graph_path, c.bandwidth_bps if c.bandwidth_bps is not None else "profiled", c.discipline): k
             for k, c in enumerate(cases)}
    rows.sort(key=lambda r: (order[(r["graph"], r["bandwidth_bps"], r["discipline"])], r["workers"], r["seed"]))
    out_dir = Path(os.path.abspath(request.out_dir))
    with output_folder(out_dir, "replay sweep") as staging:
        write_text_atomically(staging / "sweep.csv", rows_csv(rows))
        write_text_atomically(staging / "sweep.json", json.dumps(
            {"columns": list(COLUMNS), "link": dict(request.link), "backend": request.backend,
             "settings": {label: _settings_json(s) for label, s in request.disciplines}, "rows": rows},
            indent=1) + "\n")
    return SweepOutcome(rows, summary_table(rows), [out_dir / "sweep.csv", out_dir / "sweep.json"])


def _settings_json(settings: ReplaySettings) -> dict[str, Any]:
    return {k: (v if not isinstance(v, float) or math.isfinite(v) else str(v)) for k, v in asdict(settings).items()}


def rows_csv(rows: list[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(COLUMNS), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def summary_table(rows: list[dict[str, Any]]) -> str:
    """Mean steps/s over seeds per graph, bandwidth, discipline and worker count."""
    groups: dict[tuple[Any, ...], list[float]] = {}
    for r in rows:
        groups.setdefault((r["model"] or Path(r["graph"]).stem, r["bandwidth_bps"], r["discipline"], r["workers"]),
                          []).append(r["steps_per_second"])
    lines = [f"{'model':<14}{'bandwidth':>12} {'discipline':<12}{'workers':>8} {'steps/s':>10} {'seeds':>6}"]
    for (model, bandwidth, discipline, workers), rates in groups.items():
        shown = bandwidth if isinstance(bandwidth, str) else f"{bandwidth / 1e6:g}M"
        lines.append(f"{model:<14}{shown:>12} {discipline:<12}{workers:>8} {statistics.fmean(rates):>10.3f} "
                     f"{len(rates):>6}")
    return "\n".join(lines)
