"""Collect synchronous validations into one table (docs/sync-validation.md).

Reads every ``validation.json`` under the given folders written by ``tracetool validate --sync
sync|backup [--slow-worker I:FACTOR]`` and prints a Markdown table of PS updates per second,
predicted against measured, with the worker steps beside them, then the error summary: over
the points whose CPU was not saturated, and over those whose tasks used under half the cores
(as the first network's asynchronous table, docs/measure.md), overall and by discipline and slowed worker.

    python benchmarks/sync_validation_table.py runs/sync-*
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from validation_table import CPU_SHARE_OF_MACHINE, load_runs  # noqa: E402

from tracetool.cluster.topology import format_bandwidth  # noqa: E402


def slowed(doc: dict) -> str:
    """``1: 2.21x`` for worker 1 measured 2.21 times slower; ``-`` for equal workers."""
    return ", ".join(f"{s['task_index']}: {s.get('measured_slowdown') or s['factor']:.2f}x"
                     for s in doc.get("slow_workers") or []) or "-"


def light(row: dict) -> bool:
    """The cluster's tasks used under half the machine's cores, where the replay's own processor per
    task holds (the asynchronous table's criterion)."""
    cores = row.get("machine_cores") or os.cpu_count() or 1
    return not row["cpu_saturated"] and (row["cpu_cores"] or 0.0) < CPU_SHARE_OF_MACHINE * cores


def markdown_table(runs: list[dict]) -> str:
    lines = ["| model | PS link | sync | slowed worker | workers | predicted updates/s | fair sharing | "
             "measured updates/s (95% CI) | runs | error | worker steps/s predicted / measured | CPU cores |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for doc in runs:
        link = format_bandwidth(doc["bandwidth_bps"]) if doc["bandwidth_bps"] else "loopback"
        for r in doc["rows"]:
            low, high = min(r["measured_runs"]), max(r["measured_runs"])
            runs_text = "-" if len(r["measured_runs"]) < 2 else f"{low:.3f}-{high:.3f}"
            flag = "" if light(r) else (" (saturated)" if r["cpu_saturated"] else " (over half)")
            steps = (f"{r['predicted_worker_steps_per_second']:.3f} / {r['measured_worker_steps_per_second']:.3f}"
                     f" ({r['worker_steps_error_pct']:+.1f}%)" if "predicted_worker_steps_per_second" in r else "-")
            lines.append(f"| {doc['name']} | {link} | {doc.get('sync', 'async')} | {slowed(doc)} | {r['workers']} | "
                         f"{r['predicted']:.3f} | {r.get('predicted_fair', math.nan):.3f} | "
                         f"{r['measured']:.3f} ± {r['measured_ci95']:.3f} | {runs_text} | {r['error_pct']:+.1f}% | "
                         f"{steps} | {r['cpu_cores']:.2f}{flag} |")
    return "\n".join(lines)


def _line(label: str, rows: list[dict]) -> str:
    if not rows:
        return f"{label}: no points"
    errors = [abs(r["error_pct"]) for r in rows]
    return (f"{label}: {len(rows)} points, median |error| {statistics.median(errors):.1f}%, max {max(errors):.1f}%, "
            f"mean signed {statistics.fmean(r['error_pct'] for r in rows):+.1f}%; {sum(e <= 5 for e in errors)} within "
            f"5%, {sum(e <= 10 for e in errors)} within 10%")


def error_summary(runs: list[dict]) -> str:
    rows = [(doc, r) for doc in runs for r in doc["rows"] if not math.isnan(r["error_pct"])]
    lines = [_line("CPU not saturated", [r for _, r in rows if not r["cpu_saturated"]]),
             _line(f"tasks under {CPU_SHARE_OF_MACHINE:.0%} of the cores", [r for _, r in rows if light(r)])]
    groups: dict[str, list[dict]] = {}
    for doc, r in rows:
        if light(r):
            key = f"  {doc.get('sync')}, {'one worker slowed' if doc.get('slow_workers') else 'equal workers'}"
            groups.setdefault(key, []).append(r)
            groups.setdefault(f"  {r['workers']} workers", []).append(r)
    lines += [_line(key, group) for key, group in sorted(groups.items())]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    args = parser.parse_args()
    runs = [doc for doc in load_runs(args.folders) if doc.get("sync", "async") != "async"]
    if not runs:
        raise SystemExit("error: no synchronous validation.json under the given folders")
    print(markdown_table(runs))
    print()
    print(error_summary(runs))


if __name__ == "__main__":
    main()
