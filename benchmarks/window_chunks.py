"""How a long measurement window's rate moves within it, beside the short runs of the same point.

    python benchmarks/window_chunks.py LONG_DIR [LONG_DIR ...] [--chunk 20] [--root ROOT]

Each LONG_DIR is a ``tracetool measure`` output of one worker count with a long window (e.g.
``--duration 240``). Its ``step-times/*.csv`` give every worker's steps in order; a step counts
in the chunk of the window where it ends, so the rate of each ``--chunk``-second slice shows
whether the cluster holds one regime for the whole window, drifts, or starts apart from where it
settles. With ``--root`` (the environment campaign) a LONG_DIR named
``ENV-MODEL-BANDWIDTH-WORKERS`` (``probe-ENV-...`` for its TensorFlow probe's ``probe_model.py``)
is set beside that point's runs validated in turns (20-second windows): their rates, their mean
and the prediction validate made from them.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
from collections import defaultdict
from pathlib import Path


def chunk_rates(step_times: Path, chunk_s: float) -> list[float]:
    """Cluster steps per second in consecutive slices of the window, whole slices only."""
    durations: dict[int, list[float]] = defaultdict(list)
    with step_times.open() as handle:
        for row in csv.DictReader(handle):
            durations[int(row["worker"])].append(float(row["seconds"]))
    ends = []
    for steps in durations.values():
        elapsed = 0.0
        for seconds in steps:
            elapsed += seconds
            ends.append(elapsed)
    slices = int(max(ends) // chunk_s) if ends else 0
    counts = [0] * slices
    for end in ends:
        index = int(end // chunk_s)
        if index < slices:
            counts[index] += 1
    return [c / chunk_s for c in counts]


def short_runs(root: Path, name: str) -> str:
    """The point's 20-second runs validated in turns (the model's, or with a ``probe-`` prefix the
    TensorFlow probe's), their mean, and the prediction validate made from them."""
    probe = name.startswith("probe-")
    parts = name.removeprefix("probe-").split("-")
    if len(parts) != 5:
        return ""
    cc, queue, model, bandwidth, workers = parts
    turns = root / f"{cc}-{queue}" / f"{model}-{bandwidth}" / "turns"
    if not (turns / "validation.json").is_file():
        return ""
    row = next(r for r in json.loads((turns / "validation.json").read_text())["rows"] if r["workers"] == int(workers))
    if probe:
        points = json.loads((turns / "link-probe.json").read_text())["points"]
        rates = [p["steps_per_second"] for p in points if p["workers"] == int(workers)]
    else:
        rates = row["measured_runs"]
    return (f"20 s runs of the {'probe' if probe else 'model'} " + " ".join(f"{r:.2f}" for r in rates)
            + f" (mean {statistics.fmean(rates):.2f}); predicted {row['predicted']:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("long_dirs", type=Path, nargs="+")
    parser.add_argument("--chunk", type=float, default=20.0, help="seconds per slice (default 20)")
    parser.add_argument("--root", type=Path, default=None, help="the environment campaign, for the short runs")
    args = parser.parse_args()
    for long_dir in args.long_dirs:
        point = json.loads((long_dir / "measured.json").read_text())["points"][0]
        runs = point.get("runs") or [point]
        for run, csv_file in zip(runs, sorted((long_dir / "step-times").glob("*.csv")), strict=False):
            rates = chunk_rates(csv_file, args.chunk)
            spread = statistics.stdev(rates) / statistics.fmean(rates) if len(rates) > 1 else 0.0
            print(f"{long_dir.name} {csv_file.stem}: {run['steps_per_second']:.2f} steps/s over "
                  f"{run['window_s']:.0f} s; {args.chunk:g}-s slices "
                  + " ".join(f"{r:.2f}" for r in rates) + f" (spread {spread:.1%})")
        if args.root is not None:
            beside = short_runs(args.root, long_dir.name)
            if beside:
                print(f"  {beside}")


if __name__ == "__main__":
    main()
