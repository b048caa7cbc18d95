"""Several independent runs of one worker count, folded into one measured point.

Why repeat at all: with several workers on a shared link, a run settles into one pattern of
turns (which worker uploads while which downloads, which TCP connection backs off) and keeps
it for the whole window. Another run of the same cluster may settle differently; measured
here, alexnet at 100mbit with 3 workers gave 3.59, 4.23 and 3.95 steps/s in three runs whose
own 95% intervals were each under 0.1. The spread inside one run therefore understates the
uncertainty of the cluster's throughput; the spread between runs is the honest one. A point of
``R`` runs reports the mean of the runs' rates and the 95% interval of that mean over runs
(Student t with ``R - 1`` degrees of freedom), and keeps every run in full under ``runs``.

A run whose CPU was taken by something outside the cluster (the hypervisor's steal, other
processes) measured the host, not the cluster; it is left out of the mean when at least one
run was undisturbed, and the point is flagged only when every run was disturbed. The
measurement replaces such runs, up to as many extra runs as were asked for (``runs_to_try``).

Two runs that split between the regimes leave their mean uncertain by half their distance:
behind a 100 ms buffer, inception at 50mbit with three workers gave 9.27 and 7.34 steps/s.
A measurement with a limit on the standard error of the mean (``max_standard_error``, validate's
default 4%, which two runs meet when they are within 8% of their mean) runs more clusters of
such a count, one at a time, until the mean is known that well or ``max_repeats`` undisturbed
runs are in. The range of runs only grows with more of them; the standard error falls as
their count grows, so it is the measure that more runs can settle.

Why validate stops at eight runs, not four: a count whose runs fall half and half into two
regimes 18% apart (vgg at 25mbit with four workers behind a 100 ms buffer, 0.91 and 1.05 to
1.11 steps/s) has a run-to-run spread of 9% of its mean; four runs leave the mean uncertain by
4.5%, six meet 4%. Where the regimes are further apart (resnet at 25mbit with three workers,
a spread of 12%) eight leave 4.2%. The cap costs nothing where runs agree: the rule stops at
two. Over the eight campaign points validated again in turns with a cap of four, 8 of 24
contended counts stopped at the cap with their mean known to 4.1 to 7.2% only.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from typing import Any

from tracetool.errors import ToolError
from tracetool.measure.stats import t95
from tracetool.measure.updates import combined_update_fields

MAX_REPEATS = 30
# validate's defaults: two runs are within 8% of their mean, or runs go on, up to eight
VALIDATE_MAX_STANDARD_ERROR = 0.04
VALIDATE_MAX_REPEATS = 8


def disturbed(run: dict[str, Any]) -> bool:
    """The run's CPU was taken by something outside the cluster (steal, other processes)."""
    return bool((run.get("cpu") or {}).get("saturated_by_other_processes"))


def relative_standard_error(rates: list[float]) -> float:
    """The standard error of the rates' mean as a fraction of it; 0 for fewer than two rates."""
    if len(rates) < 2:
        return 0.0
    mean = statistics.fmean(rates)
    return statistics.stdev(rates) / math.sqrt(len(rates)) / mean if mean > 0 else math.inf


def squared_relative_deviations(rates: list[float]) -> tuple[float, int]:
    """Sum of the rates' squared deviations from their mean, relative to it, and its degrees of freedom."""
    mean = statistics.fmean(rates)
    return sum((r / mean - 1.0) ** 2 for r in rates), len(rates) - 1


def pooled_relative_spread(groups: list[list[float]]) -> float | None:
    """The coefficient of variation of runs around their own group's mean, pooled over the groups
    of two or more runs; None where no group has two."""
    squares, freedom = 0.0, 0
    for rates in groups:
        if len(rates) > 1:
            sq, dof = squared_relative_deviations(rates)
            squares, freedom = squares + sq, freedom + dof
    return math.sqrt(squares / freedom) if freedom else None


def rates_by_workers(points: list[dict[str, Any]]) -> dict[int, list[float]]:
    """Each worker count's run rates, from points that list one run each (a link probe's)."""
    rates: dict[int, list[float]] = {}
    for point in points:
        rates.setdefault(int(point["workers"]), []).append(float(point["steps_per_second"]))
    return dict(sorted(rates.items()))


def compared_rate(run: dict[str, Any]) -> float:
    """The rate a run's mean is judged by: PS updates per second, which validate compares under
    ``--sync sync|backup``; in asynchronous training they are the worker steps per second. Under
    backup workers the two part: gradients dropped vary from run to run, so updates can spread
    where steps do not."""
    return float(run.get("updates_per_second", run["steps_per_second"]))


def runs_to_try(repeats: int, runs: list[dict[str, Any]], max_repeats: int | None = None,
                max_standard_error: float | None = None) -> int:
    """How many more runs to start: until ``repeats`` undisturbed ones, at most ``2 * repeats`` in
    all; then, with ``max_standard_error``, one more at a time while the undisturbed runs' mean has
    a larger relative standard error, up to ``max_repeats`` undisturbed runs (and as many extra
    runs for disturbed ones as the first ``repeats`` may have)."""
    clean = [r for r in runs if not disturbed(r)]
    missing = max(0, min(repeats - len(clean), 2 * repeats - len(runs)))
    if missing or max_standard_error is None or max_repeats is None:
        return missing
    if len(clean) < repeats or len(clean) >= max_repeats or len(runs) >= max_repeats + repeats:
        return 0
    return 1 if relative_standard_error([compared_rate(r) for r in clean]) > max_standard_error else 0


def below_cap(repeats: int, runs: list[dict[str, Any]], max_repeats: int | None,
              max_standard_error: float | None) -> bool:
    """Whether the rule for more runs would still allow another one (``runs_to_try``'s cap)."""
    if max_standard_error is None or max_repeats is None:
        return False
    clean = [r for r in runs if not disturbed(r)]
    return len(clean) < max_repeats and len(runs) < max_repeats + repeats


RunRule = tuple[int, list[dict[str, Any]], int | None, float | None]  # repeats, runs, max_repeats, max_standard_error
ALONGSIDE = "taking turns with the other measurement's extra run"


def runs_this_round(measurements: list[RunRule], disagreement: Callable[[], str | None] | None = None,
                    ) -> list[str | None]:
    """Which of several measurements taking turns on one link run once more in this round: each
    that ``runs_to_try`` asks a run of, and, while any does, each other one its cap allows, so
    that their runs cover the same minutes. Where none asks, ``disagreement`` may still say why
    all of them should run again (``twins_disagree``). Per measurement, None (no run) or why it
    runs: empty for the runs asked for, else ``why_another_run``'s reason, ``ALONGSIDE`` or the
    disagreement."""
    wanted = [runs_to_try(*rule) > 0 for rule in measurements]
    if not any(wanted):
        reason = disagreement() if disagreement is not None else None
        return [reason if reason and below_cap(*rule) else None for rule in measurements]
    return [("" if len(rule[1]) < rule[0] else why_another_run(rule[0], rule[1])) if want
            else (ALONGSIDE if below_cap(*rule) else None)
            for rule, want in zip(measurements, wanted, strict=True)]


def twins_disagree(rates: list[float], twin_rates: list[float], max_standard_error: float) -> str | None:
    """Why two measurements of one link that should run alike (a model and validate's TensorFlow
    probe of its step) need more runs: their means are further apart than ``max_standard_error``;
    None where they agree that closely.

    Why: the prediction meets the probe's mean, so the error of validate's row is the gap
    between the two means (across the environment campaign's 108 contended rows: correlation
    0.96, median difference 0.5 points). Two runs of each that agree among themselves can still
    each have sampled one regime: behind a 100 ms buffer with CUBIC, resnet at 50mbit with three
    workers ran 6.9 and 7.35 steps/s, its probe 6.14 and 5.95; measured again in turns, both
    split between about 6.3 and 7.4. More runs of both settle such a gap; a twin's true bias
    stays and shows. A gap that the runs' spread could explain is no reason to stop: with the
    same point's three runs a side (model 6.31, 7.17, 6.82; probe 6.55, 6.44, 5.84) each mean was
    known to 4% and the two stood 7.2% apart, a gap whose own standard error (5.1%) left it
    anywhere from nothing to 17%, and the row read -8.7% on that one sample. Until the cap, only
    more runs tell a bias from the regimes' sampling."""
    if len(rates) < 1 or len(twin_rates) < 1:
        return None
    mean, twin_mean = statistics.fmean(rates), statistics.fmean(twin_rates)
    if mean <= 0 or twin_mean <= 0:
        return None
    gap = abs(twin_mean / mean - 1.0)
    if gap <= max_standard_error:
        return None
    spread = math.hypot(relative_standard_error(rates), relative_standard_error(twin_rates))
    if gap > 2.0 * spread:
        return f"the model's and its probe's means are {gap:.1%} apart, beyond their runs' spread"
    return (f"the model's and its probe's means are {gap:.1%} apart, within their runs' spread ({spread:.1%}) "
            "but not yet known")


def twin_runs_disagree(runs: list[dict[str, Any]], twin_runs: list[dict[str, Any]],
                       max_standard_error: float) -> str | None:
    """``twins_disagree`` on two measurements' runs, the disturbed ones left out."""
    rates, twin_rates = ([r["steps_per_second"] for r in arm if not disturbed(r)] for arm in (runs, twin_runs))
    return twins_disagree(rates, twin_rates, max_standard_error)


def _mean_of(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def _combined_cpu(cpus: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean cores over the runs' windows; a flag holds if it held in any run."""
    names = sorted({name for c in cpus for name in c["process_cores"]})
    combined: dict[str, Any] = {
        "window_s": sum(c["window_s"] for c in cpus),
        "process_cores": {n: _mean_of([c["process_cores"].get(n) for c in cpus]) for n in names},
        "machine_cores": cpus[0]["machine_cores"],
    }
    for key in ("tasks_total_cores", "machine_busy_cores", "steal_cores"):
        combined[key] = _mean_of([c.get(key) for c in cpus])
    for key in ("saturated", "saturated_by_other_processes", "stolen_by_hypervisor"):
        combined[key] = any(c.get(key, False) for c in cpus)
    return combined


def _combined_workers(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    combined = []
    for index in range(len(runs[0]["per_worker"])):
        entries = [r["per_worker"][index] for r in runs]
        rates = [e["steps_per_second"] for e in entries]
        combined.append({
            "task_index": index,
            "steps_per_second": statistics.fmean(rates),
            "steps_per_second_std": statistics.stdev(rates),
            "run_steps_per_second": rates,
            "steps_in_window": sum(e["steps_in_window"] for e in entries),
            "mean_step_time_s": _mean_of([e.get("mean_step_time_s") for e in entries]),
            "cpu_cores_self_reported": _mean_of([e.get("cpu_cores_self_reported") for e in entries]),
            "cpu_cores": _mean_of([e.get("cpu_cores") for e in entries]),
        })
    return combined


def _run_updates(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The one counted run's update rate as a list, like ``run_steps_per_second``."""
    return {"run_updates_per_second": [runs[0]["updates_per_second"]]} if "updates_per_second" in runs[0] else {}


def why_another_run(repeats: int, runs: list[dict[str, Any]]) -> str:
    """Why ``runs_to_try`` started one more than ``repeats``: a disturbed run, or runs that disagree."""
    clean = [r for r in runs if not disturbed(r)]
    if len(clean) < repeats:
        return "a run was disturbed from outside"
    error = relative_standard_error([compared_rate(r) for r in clean])
    return f"the runs' mean is known to {error:.1%} only"


def check_more_runs(repeats: int, max_repeats: int | None, max_standard_error: float | None) -> None:
    """Refuse a limit on the runs' standard error that more runs could never meet, or a cap below
    the runs asked for; the two options come together."""
    if max_standard_error is None:
        return
    if not 0 < max_standard_error < 1:
        raise ToolError(f"--max-standard-error must be a percentage between 0 and 100, got {max_standard_error:.0%}")
    if max_repeats is None or not repeats <= max_repeats <= MAX_REPEATS:
        raise ToolError(f"--max-repeats must be between --repeats ({repeats}) and {MAX_REPEATS}, got {max_repeats}")


def combine_runs(runs: list[dict[str, Any]], batch_size: int) -> dict[str, Any]:
    """One point from the points of independent runs with the same worker count.

    A single run is returned as it is, marked as one run; several give the mean rate with the
    between-run spread over the undisturbed runs (``runs_left_out`` indexes the others), and
    keep every run's own point."""
    if not runs:
        raise ValueError("no runs to combine")
    if len(runs) == 1:
        return {**runs[0], "repeats": 1, "run_steps_per_second": [runs[0]["steps_per_second"]],
                **_run_updates(runs)}
    all_runs = runs
    left_out = [i for i, r in enumerate(runs) if disturbed(r)]
    if len(left_out) < len(runs):
        runs = [r for i, r in enumerate(runs) if i not in left_out]
    else:
        left_out = []
    if len(runs) == 1:
        return _with_traces({**runs[0], "repeats": len(all_runs), "run_steps_per_second": [runs[0]["steps_per_second"]],
                             **_run_updates(runs), "runs_left_out": left_out, "runs": all_runs}, all_runs)
    rates = [r["steps_per_second"] for r in runs]
    mean = statistics.fmean(rates)
    std = statistics.stdev(rates)
    point: dict[str, Any] = {
        "workers": runs[0]["workers"],
        "steps_per_second": mean,
        "examples_per_second": mean * batch_size,
        "steps_per_second_std": std,
        "steps_per_second_ci95": t95(len(runs) - 1) * std / math.sqrt(len(runs)),
        "spread": "between runs",
        "repeats": len(all_runs),
        "run_steps_per_second": rates,
        "runs_left_out": left_out,
        "window_s": sum(r["window_s"] for r in runs),
        "bins": sum(r["bins"] for r in runs),
        "bin_s": runs[0]["bin_s"],
        "bin_steps_per_second": [b for r in runs for b in r["bin_steps_per_second"]],
        "per_worker": _combined_workers(runs),
        "cpu_saturated": any(r["cpu_saturated"] for r in runs),
        **combined_update_fields(runs),
        "runs": all_runs,
    }
    cpus = [r["cpu"] for r in runs if r.get("cpu")]
    if len(cpus) == len(runs):
        point["cpu"] = _combined_cpu(cpus)
    return _with_traces(point, all_runs)


def _with_traces(point: dict[str, Any], all_runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Only the first run traces steps; its traces stay the point's even when that run was left
    out as disturbed, since they show the contended steps' ops rather than the window's rate."""
    traces = [r["traces"] for r in all_runs if r.get("traces")]
    if traces:
        point["traces"] = traces[0]
    return point
