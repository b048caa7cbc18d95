"""What a validation reports: each worker count's predicted rate set against the measured runs
(error, the seeds' range, the range one run is predicted to fall in, the runs' own spread), the
summary of absolute errors, the printed table and the PNG plot.

Kept apart from ``validate``, which runs the stages, so that a saved validation can be compared,
tabulated and plotted again without anything that measures or simulates.
"""

from __future__ import annotations

import io
import math
import statistics
from typing import Any

from tracetool.measure.compared import WORKER_STEPS, Compared, synchronous_details
from tracetool.measure.repeats import pooled_relative_spread, relative_standard_error


def error_pct(predicted: float, measured: float) -> float:
    """Signed error of a prediction relative to the measurement, in percent."""
    return (predicted - measured) / measured * 100.0 if measured > 0 else math.nan



# Below this an error is not told apart from the runs' spread even where two runs agree closer:
# one worker's runs vary by 0.4 to 0.9% (coefficient of variation) across the environment campaign.
RESOLVED_ERROR_PCT = 1.0


def run_spread(measured_runs: list[float], probe_runs: list[float]) -> dict[str, Any]:
    """The error the runs' own spread gives, with a prediction exact for the probe's mean: the
    relative standard errors of the measured mean and of the probe's mean combined, in percent.
    Where it is known (two or more runs), an error within twice it is one the runs alone could
    make (docs/network-probe.md, "Runs until their mean is known")."""
    measured_se = relative_standard_error(measured_runs)
    probe_se = relative_standard_error(probe_runs)
    if not measured_se and not probe_se:
        return {}
    return {"measured_standard_error_pct": 100.0 * measured_se, "probe_standard_error_pct": 100.0 * probe_se,
            "run_spread_error_pct": 100.0 * math.hypot(measured_se, probe_se)}


# A run falls within this many of the probe's pooled run spreads (coefficient of variation) of
# the prediction, or within the regimes: the range one run of the cluster is predicted to fall in.
RUN_RANGE_SPREADS = 2.0


def probe_run_spread(probe_runs: dict[int, list[float]] | None) -> float | None:
    """How far one run strays from its count's mean on this link: the coefficient of variation of
    the probe's runs pooled over its counts of two or more workers (``repeats.pooled_relative_spread``);
    None without a probe of two runs at some count."""
    if not probe_runs:
        return None
    return pooled_relative_spread([rates for workers, rates in probe_runs.items() if workers > 1])


def one_run_range(predicted: float, regime: dict[str, Any] | None, run_spread: float | None,
                  ) -> tuple[float, float] | None:
    """The range one measured run is predicted to fall in: the replay's two regimes (a run settles
    into a pipeline or keeps bunching, replay/regimes.py), widened to the prediction give or take
    ``RUN_RANGE_SPREADS`` of the probe's run spread. Why both: the regimes are the sharing
    patterns the replay knows; runs also stray by what it does not model (TCP's own dynamics, a
    link that drifts), which the probe, a twin of the model's runs on the same link, measures.
    Over the environment campaign's 123 rows of two to four workers with regimes, every run fell
    within the regimes alone in 31; within this range in 87 (82% of the runs)."""
    bounds = []
    if regime is not None:
        bounds.append((regime["low"], regime["high"]))
    if run_spread:
        bounds.append((predicted * (1.0 - RUN_RANGE_SPREADS * run_spread),
                       predicted * (1.0 + RUN_RANGE_SPREADS * run_spread)))
    if not bounds:
        return None
    return min(low for low, _ in bounds), max(high for _, high in bounds)


def compare(predicted: list[dict[str, Any]], measured: list[dict[str, Any]],
            bound: list[dict[str, Any]] | None = None, compared: Compared = WORKER_STEPS,
            regimes: list[dict[str, Any]] | None = None,
            probe_runs: dict[int, list[float]] | None = None) -> list[dict[str, Any]]:
    """One row per worker count in both: ``compared``'s rate predicted against measured."""
    run_spread_of_probe = probe_run_spread(probe_runs)
    by_workers = {p["workers"]: p for p in predicted}
    bound_by_workers = {p["workers"]: p for p in bound or []}
    regimes_by_workers = {r["workers"]: r for r in regimes or []}
    rows = []
    for m in sorted(measured, key=lambda p: p["workers"]):
        p = by_workers.get(m["workers"])
        if p is None:
            continue
        cpu = m.get("cpu") or {}
        want, got = compared.predicted(p), compared.measured(m)
        runs = got["runs"]
        other = bound_by_workers.get(m["workers"])
        band: dict[str, Any] = {}
        if other is not None:
            fair = compared.predicted(other)
            band = {
                # equal sharing, phases never settling into turns: the pessimistic end
                "predicted_fair": fair["value"],
                "within_sharing_band": min(want["min"], fair["min"]) <= got["value"] <= max(want["max"], fair["max"]),
            }
        regime = regimes_by_workers.get(m["workers"])
        if regime is not None:
            band |= {"predicted_regime_low": regime["low"], "predicted_regime_high": regime["high"],
                     "bunching_chance": regime["bunching_chance"]}
        one_run = one_run_range(want["value"], regime, run_spread_of_probe if m["workers"] > 1 else None)
        if one_run is not None:
            low, high = one_run
            band |= {
                "predicted_run_low": low,
                "predicted_run_high": high,
                **({"probe_run_spread_pct": 100.0 * run_spread_of_probe}
                   if run_spread_of_probe and m["workers"] > 1 else {}),
                "runs_outside_predicted_range": [v for v in runs if not low <= v <= high],
                "within_predicted_run_range": low <= got["value"] <= high and all(low <= v <= high for v in runs),
            }
        if compared is not WORKER_STEPS:
            band.update(synchronous_details(p, m))
        band |= run_spread(runs, (probe_runs or {}).get(m["workers"], []) if m["workers"] > 1 else [])
        rows.append({**band,
            "workers": m["workers"],
            "predicted": want["value"],
            "predicted_std": want["std"],
            "predicted_min": want["min"],
            "predicted_max": want["max"],
            "measured": got["value"],
            "measured_ci95": got["ci95"],
            "measured_std": got["std"],
            "measured_runs": runs,
            # With repeated runs, a prediction between the slowest and the fastest run is one the
            # cluster itself has produced; its error is no larger than the runs' own disagreement.
            "within_measured_runs": min(runs) <= want["value"] <= max(runs),
            "error_pct": error_pct(want["value"], got["value"]),
            **({"within_run_spread": abs(error_pct(want["value"], got["value"]))
                <= max(2.0 * band["run_spread_error_pct"], RESOLVED_ERROR_PCT)}
               if "run_spread_error_pct" in band else {}),
            # Where workers' phases on a shared link settle differs from seed to seed and from run
            # to run; a measurement inside the seeds' range is one the model can produce.
            "within_predicted_range": want["min"] <= got["value"] <= want["max"],
            "predicted_examples_per_second": p["examples_per_second"],
            "measured_examples_per_second": m["examples_per_second"],
            "predicted_downlink_utilization": p.get("downlink_utilization"),
            "predicted_uplink_utilization": p.get("uplink_utilization"),
            "cpu_cores": cpu.get("tasks_total_cores"),
            "machine_cores": cpu.get("machine_cores"),
            "cpu_saturated": bool(m.get("cpu_saturated")),
        })
    return rows


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def stats(selected: list[dict[str, Any]]) -> dict[str, Any]:
        errors = [abs(r["error_pct"]) for r in selected if not math.isnan(r["error_pct"])]
        return {
            "points": len(errors),
            "median_abs_error_pct": statistics.median(errors) if errors else None,
            "max_abs_error_pct": max(errors) if errors else None,
            "mean_signed_error_pct": statistics.fmean(r["error_pct"] for r in selected) if errors else None,
            "within_predicted_range": sum(1 for r in selected if r.get("within_predicted_range")),
            "within_sharing_band": sum(1 for r in selected if r.get("within_sharing_band")),
            "with_predicted_run_range": sum(1 for r in selected if "within_predicted_run_range" in r),
            "within_predicted_run_range": sum(1 for r in selected if r.get("within_predicted_run_range")),
            "with_run_spread": sum(1 for r in selected if "within_run_spread" in r),
            "within_run_spread": sum(1 for r in selected if r.get("within_run_spread")),
            "within_measured_runs": sum(1 for r in selected if len(r.get("measured_runs", [])) > 1
                                        and r.get("within_measured_runs")),
        }

    unsaturated = [r for r in rows if not r["cpu_saturated"]]
    return {**stats(rows), "cpu_unsaturated": stats(unsaturated)}


def format_table(title: str, rows: list[dict[str, Any]], summary: dict[str, Any], unit: str = "steps/s") -> str:
    lines = [title, f"{'workers':>7} {'predicted':>10} {'seed range':>13} {'one run':>13} {'fair':>9} "
                    f"{'measured':>16} {'error':>8}  CPU cores"]
    for r in rows:
        cpu = f"{r['cpu_cores']:.2f}" if r["cpu_cores"] is not None else "-"
        flag = "  saturated" if r["cpu_saturated"] else ""
        if "within_predicted_run_range" in r and not r["within_predicted_run_range"]:
            flag += "  a run outside one run's range"
        if "within_run_spread" in r and not r["within_run_spread"]:
            flag += "  beyond the runs' spread"
        low, high = r.get("predicted_min", r["predicted"]), r.get("predicted_max", r["predicted"])
        regimes = (f"{r['predicted_run_low']:>6.3f}-{r['predicted_run_high']:<6.3f}"
                   if "predicted_run_low" in r else f"{'-':>13}")
        fair = f"{r['predicted_fair']:>9.3f}" if "predicted_fair" in r else f"{'-':>9}"
        lines.append(f"{r['workers']:>7} {r['predicted']:>10.3f} {low:>6.3f}-{high:<6.3f} {regimes} {fair} "
                     f"{r['measured']:>9.3f} +-{r['measured_ci95']:<5.3f}"
                     f" {r['error_pct']:>+7.1f}%  {cpu}{flag}")
    if summary["points"]:
        band = (f"; {summary['within_sharing_band']} of {summary['points']} measured between the prediction and "
                "fair sharing" if any("within_sharing_band" in r for r in rows) else "")
        repeated = any(len(r.get("measured_runs", [])) > 1 for r in rows)
        runs = (f"; {summary['within_measured_runs']} predicted within the measured runs' range"
                if repeated else "")
        regimes = (f"; {summary['within_predicted_run_range']} of {summary['with_predicted_run_range']} with "
                   "every run within one run's predicted range" if summary.get("with_predicted_run_range") else "")
        regimes += (f"; {summary['within_run_spread']} of {summary['with_run_spread']} within twice the runs' "
                    "standard error" if summary.get("with_run_spread") else "")
        lines.append(f"{unit}; median |error| {summary['median_abs_error_pct']:.1f}%, "
                     f"max |error| {summary['max_abs_error_pct']:.1f}%{band}{runs}{regimes}")
    return "\n".join(lines)


def plot_png(title: str, rows: list[dict[str, Any]], unit: str = "steps/s") -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    workers = [r["workers"] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 4), dpi=110)
    ax.fill_between(workers, [r.get("predicted_min", r["predicted"]) for r in rows],
                    [r.get("predicted_max", r["predicted"]) for r in rows], alpha=0.15,
                    label="predicted, min-max over seeds")
    ranged = [r for r in rows if "predicted_run_low" in r]
    if ranged:
        ax.fill_between([r["workers"] for r in ranged], [r["predicted_run_low"] for r in ranged],
                        [r["predicted_run_high"] for r in ranged], alpha=0.12, hatch="//", edgecolor="gray",
                        facecolor="none", label="one run, predicted (regimes, probe's run spread)")
    if all("predicted_fair" in r for r in rows):
        ax.plot(workers, [r["predicted_fair"] for r in rows], linestyle="--", marker="^",
                label="predicted with fair sharing (no turns)")
    ax.errorbar(workers, [r["predicted"] for r in rows], yerr=[r["predicted_std"] for r in rows],
                marker="o", capsize=4, label="predicted (replay, std over seeds)")
    measured = ax.errorbar(workers, [r["measured"] for r in rows], yerr=[r["measured_ci95"] for r in rows],
                           marker="s", capsize=4, label="measured (95% CI)")
    repeated = [(r["workers"], v) for r in rows if len(r.get("measured_runs", [])) > 1 for v in r["measured_runs"]]
    if repeated:
        ax.plot(*zip(*repeated, strict=True), ".", color=measured[0].get_color(), alpha=0.5,
                label="measured runs")
    saturated = [r for r in rows if r["cpu_saturated"]]
    if saturated:
        ax.scatter([r["workers"] for r in saturated], [r["measured"] for r in saturated], s=160,
                   facecolors="none", edgecolors="red", label="CPU saturated")
    ax.set_xlabel("workers")
    ax.set_ylabel("steps per second (all workers)" if unit == "steps/s" else unit)
    ax.set_xticks(workers)
    ax.set_ylim(bottom=0)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return buffer.getvalue()
