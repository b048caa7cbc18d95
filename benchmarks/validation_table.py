"""Collect validation runs into one table and one figure (the first network's, docs/measure.md).

Reads every ``validation.json`` under the given folders (written by ``tracetool validate``),
prints a Markdown table (model, bandwidth, workers, predicted, seed range, measured, error, CPU)
and the error summary over all points, and writes a PNG with one panel per model and bandwidth.

    python benchmarks/validation_table.py runs/val-* --png docs/validation.png
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tracetool.atomic_files import write_text_atomically  # noqa: E402
from tracetool.cluster.topology import format_bandwidth  # noqa: E402

MODEL_ORDER = ["alexnet", "vgg", "inception", "resnet", "mlp"]


def load_runs(folders: list[Path]) -> list[dict]:
    runs = []
    for folder in folders:
        for path in sorted(folder.rglob("validation.json")) if folder.is_dir() else [folder]:
            doc = json.loads(path.read_text())
            doc["name"] = Path(doc["model"]).stem
            runs.append(doc)
    order = {name: i for i, name in enumerate(MODEL_ORDER)}
    runs.sort(key=lambda d: (order.get(d["name"], len(order)), d["bandwidth_bps"] or 0))
    return runs


def markdown_table(runs: list[dict]) -> str:
    lines = [
        "| model | PS link | E | workers | predicted steps/s | seed range | fair sharing | measured steps/s (95% CI) "
        "| runs | error | CPU cores |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for doc in runs:
        link = format_bandwidth(doc["bandwidth_bps"]) if doc["bandwidth_bps"] else "loopback"
        # the link's contention efficiency the prediction used (older files: not recorded)
        efficiency = f"{doc['contention_efficiency']:.3f}" if "contention_efficiency" in doc else "-"
        for r in doc["rows"]:
            flag = " (saturated)" if r["cpu_saturated"] else ""
            fair = f"{r['predicted_fair']:.3f}" if "predicted_fair" in r else "-"
            runs = r.get("measured_runs", [])
            spread = f"{min(runs):.2f}-{max(runs):.2f}" if len(runs) > 1 else "-"
            lines.append(
                f"| {doc['name']} | {link} | {efficiency} | {r['workers']} | {r['predicted']:.3f} | "
                f"{r.get('predicted_min', r['predicted']):.2f}-{r.get('predicted_max', r['predicted']):.2f} | "
                f"{fair} | {r['measured']:.3f} ± {r['measured_ci95']:.3f} | {spread} | {r['error_pct']:+.1f}% | "
                f"{r['cpu_cores']:.2f}{flag} |"
            )
    return "\n".join(lines)


# The replay gives every task a processor of its own. On a small machine that holds while the
# cluster's tasks use well under its cores; above half of them their bursts collide.
CPU_SHARE_OF_MACHINE = 0.5


def _summary_line(label: str, rows: list[dict]) -> list[str]:
    if not rows:
        return [f"{label}: no points"]
    errors = [abs(r["error_pct"]) for r in rows]
    by_n: dict[int, list[float]] = {}
    for r in rows:
        by_n.setdefault(r["workers"], []).append(abs(r["error_pct"]))
    inside = sum(1 for r in rows if r.get("within_predicted_range"))
    band = sum(1 for r in rows if r.get("within_sharing_band"))
    repeated = [r for r in rows if len(r.get("measured_runs", [])) > 1]
    among_runs = (f"; {sum(1 for r in repeated if r['within_measured_runs'])} of {len(repeated)} repeated points "
                  "predicted within the measured runs' range" if repeated else "")
    return [
        f"{len(rows)} points ({label}): median |error| {statistics.median(errors):.1f}%, "
        f"max {max(errors):.1f}%, mean signed {statistics.fmean(r['error_pct'] for r in rows):+.1f}%; "
        f"{sum(e <= 10 for e in errors)} within 10%, {sum(e <= 5 for e in errors)} within 5%; "
        f"{inside} inside the seeds' range; {band} between the prediction and fair sharing{among_runs}",
        "  median |error| by workers: "
        + ", ".join(f"{n}: {statistics.median(v):.1f}%" for n, v in sorted(by_n.items())),
    ]


def error_summary(runs: list[dict]) -> str:
    rows = [r for doc in runs for r in doc["rows"] if not r["cpu_saturated"] and not math.isnan(r["error_pct"])]
    # files from before rows recorded the machine's cores were measured here
    light = [r for r in rows
             if (r["cpu_cores"] or 0.0) < CPU_SHARE_OF_MACHINE * (r.get("machine_cores") or os.cpu_count() or 1)]
    return "\n".join(_summary_line("CPU not saturated", rows)
                     + _summary_line(f"tasks under {CPU_SHARE_OF_MACHINE:.0%} of the cores", light))


def figure(runs: list[dict]) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [n for n in MODEL_ORDER if any(d["name"] == n for d in runs)]
    names += sorted({d["name"] for d in runs} - set(names))
    columns = max(sum(1 for d in runs if d["name"] == n) for n in names)
    fig, axes = plt.subplots(len(names), columns, figsize=(3.6 * columns, 2.5 * len(names)), dpi=100, squeeze=False)
    for row, name in enumerate(names):
        docs = [d for d in runs if d["name"] == name]
        for col in range(columns):
            ax = axes[row][col]
            if col >= len(docs):
                ax.axis("off")
                continue
            doc = docs[col]
            rows = doc["rows"]
            workers = [r["workers"] for r in rows]
            ax.fill_between(workers, [r.get("predicted_min", r["predicted"]) for r in rows],
                            [r.get("predicted_max", r["predicted"]) for r in rows], alpha=0.15, color="C0")
            ax.plot(workers, [r["predicted"] for r in rows], "o-", color="C0", label="predicted (seed range)")
            if all("predicted_fair" in r for r in rows):
                ax.plot(workers, [r["predicted_fair"] for r in rows], "^:", color="C2",
                        label="fair sharing (no turns)")
            ax.errorbar(workers, [r["measured"] for r in rows], yerr=[r["measured_ci95"] for r in rows], fmt="s--",
                        color="C1", capsize=3, label="measured (95% CI)")
            repeated = [(r["workers"], v) for r in rows if len(r.get("measured_runs", [])) > 1
                        for v in r["measured_runs"]]
            if repeated:
                ax.plot(*zip(*repeated, strict=True), ".", color="C1", alpha=0.5, ms=4, label="measured runs")
            ax.axhline(doc["link_bound_steps_per_second"], color="grey", lw=0.8, ls=":", label="link bound")
            link = format_bandwidth(doc["bandwidth_bps"]) if doc["bandwidth_bps"] else "loopback"
            ax.set_title(f"{name}, {link}", fontsize=9)
            ax.set_xticks(workers)
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
            ax.tick_params(labelsize=8)
            if col == 0:
                ax.set_ylabel("steps/s", fontsize=8)
            if row == len(names) - 1:
                ax.set_xlabel("workers", fontsize=8)
    axes[0][0].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return buffer.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--png", type=Path, default=None, help="write the figure here")
    args = parser.parse_args()
    runs = load_runs(args.folders)
    if not runs:
        raise SystemExit("error: no validation.json under the given folders; run 'tracetool validate' first")
    print(markdown_table(runs))
    print()
    print(error_summary(runs))
    if args.png:
        write_text_atomically(args.png, figure(runs))
        print(f"wrote {args.png}")


if __name__ == "__main__":
    main()
