"""How many rows over a limit the runs' own spread explains, with no fault in the prediction.

A point's error compares two means of a few runs each: TensorFlow's measured runs and, through
the fit, the TensorFlow probe's runs. Each run settles into one regime for its whole window, so
both means carry the run-to-run spread. This pools that spread per environment and worker count
(the coefficient of variation of runs around their point's mean, TensorFlow's and the probe's
runs alike, corrected for the mean's own degree of freedom), then asks how often an error larger
than the limit arises from it alone: a prediction that were exact for the probe's mean would
still miss TensorFlow's by ``Z * sqrt(cv^2 / n_measured + cv^2 / n_probe)``, with Z standard
normal. The expected count of rows over the limit is set beside the observed one.

    python benchmarks/noise_floor.py ROOT [--variant more-runs-predicted] [--limit 8]

ROOT holds the environment campaign (``benchmarks/environment_table.py``); a point's errors are
read from ``POINT/VARIANT/validation.json``, its runs from ``POINT/more-runs/{measured,
link-probe}.json`` for the variant with more runs, else from its measurement and its merged
TensorFlow probe (``--variant tf-probe-2runs``: two runs each).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tracetool.measure.repeats import rates_by_workers, squared_relative_deviations  # noqa: E402


def runs_of(point_dir: Path, with_more: bool) -> tuple[dict[int, list[float]], dict[int, list[float]]]:
    """TensorFlow's and the probe's run rates per worker count."""
    more = point_dir / "more-runs"
    with_more = with_more and (more / "measured.json").is_file()
    measured_file = more / "measured.json" if with_more else point_dir / "measured/measured.json"
    probe_file = more / "link-probe.json" if with_more else point_dir / "tf-probe-merged/link-probe.json"
    measured = {p["workers"]: list(p.get("run_steps_per_second") or [p["steps_per_second"]])
                for p in json.loads(measured_file.read_text())["points"]}
    return measured, rates_by_workers(json.loads(probe_file.read_text())["points"])


def two_sided_tail(z: float) -> float:
    return math.erfc(z / math.sqrt(2.0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--variant", default="more-runs-predicted")
    parser.add_argument("--limit", type=float, default=8.0, help="|error| limit in percent (default 8)")
    args = parser.parse_args()

    rows = []  # (environment, workers, |error| %, measured runs, probe runs)
    pooled: dict[tuple[str, int], list[float]] = defaultdict(lambda: [0.0, 0])
    for vfile in sorted(args.root.glob(f"*/*/{args.variant}/validation.json")):
        point_dir = vfile.parent.parent
        env = point_dir.parent.name
        measured, probe = runs_of(point_dir, args.variant == "more-runs-predicted")
        for row in json.loads(vfile.read_text())["rows"]:
            if row.get("cpu_saturated"):
                continue
            workers = row["workers"]
            for rates in (measured.get(workers, []), probe.get(workers, [])):
                if len(rates) > 1:
                    sq, dof = squared_relative_deviations(rates)
                    pooled[(env, workers)][0] += sq
                    pooled[(env, workers)][1] += dof
            rows.append((env, workers, abs(row["error_pct"]), len(measured.get(workers, [1])),
                         len(probe.get(workers, [])) if workers > 1 else 0))

    print(f"{'environment':12s} {'workers':>7s} {'run cv':>7s} {'rows':>5s} {'expected over':>14s} "
          f"{'observed over':>14s}")
    totals = [0.0, 0]
    for env in sorted({r[0] for r in rows}):
        for workers in sorted({r[1] for r in rows if r[0] == env}):
            sq, dof = pooled[(env, workers)]
            cv = math.sqrt(sq / dof) if dof else 0.0
            selected = [r for r in rows if r[0] == env and r[1] == workers]
            expected = 0.0
            for _, _, _, n_measured, n_probe in selected:
                se = cv * math.sqrt(1.0 / n_measured + (1.0 / n_probe if n_probe else 0.0)) * 100.0
                expected += two_sided_tail(args.limit / se) if se > 0 else 0.0
            observed = sum(1 for r in selected if r[2] > args.limit)
            totals[0] += expected
            totals[1] += observed
            print(f"{env:12s} {workers:>7d} {cv:>6.1%} {len(selected):>5d} {expected:>14.1f} {observed:>14d}")
    print(f"all: {len(rows)} rows, {totals[0]:.1f} expected over {args.limit:g}% from the runs' spread alone, "
          f"{totals[1]} observed")


if __name__ == "__main__":
    main()
