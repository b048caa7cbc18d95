"""The environment campaign's points validated again in turns, beside the campaign's own errors.

    python benchmarks/turns_table.py ROOT

For each point with ``POINT/turns/validation.json`` (``benchmarks/environment_turns.sh``) it
prints, per worker count, the campaign's error (column A of ``environment_table.py``, from
``POINT/more-runs-predicted/``), the error validated again in turns (TT), the runs each side
took, the cap on runs the measurement had, and whether every run fell within one run's
predicted range; then the median and max |error| of both columns over the same rows, per
environment and in all. The four points measured first (the campaign's worst rows) are listed
apart: points chosen for being bad regress towards their mean when measured again.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tracetool.measure.repeats import rates_by_workers  # noqa: E402
from tracetool.measure.validate import one_run_range, probe_run_spread  # noqa: E402

WORST_FIRST = ("cubic-100ms/resnet-50mbit", "cubic-100ms/inception-25mbit", "bbr-100ms/vgg-25mbit",
               "cubic-5ms/vgg-25mbit")


def every_run_in_range(row: dict[str, Any], regimes: dict[int, dict[str, Any]], spread: float | None) -> bool | None:
    """The row's own verdict, or, for validations written before it had one, the same range
    computed from their files."""
    if "within_predicted_run_range" in row:
        return row["within_predicted_run_range"]
    workers = row["workers"]
    bounds = one_run_range(row["predicted"], regimes.get(workers), spread if workers > 1 else None)
    return None if bounds is None else all(bounds[0] <= run <= bounds[1] for run in row["measured_runs"])


def point_rows(point_dir: Path) -> list[dict[str, Any]]:
    turns = point_dir / "turns"
    validation = json.loads((turns / "validation.json").read_text())
    campaign_file = point_dir / "more-runs-predicted" / "validation.json"
    campaign = ({r["workers"]: r["error_pct"] for r in json.loads(campaign_file.read_text())["rows"]}
                if campaign_file.is_file() else {})
    cap = json.loads((turns / "measured" / "measured.json").read_text()).get("max_repeats")
    probed = rates_by_workers(json.loads((turns / "link-probe.json").read_text())["points"])
    regimes = {p["workers"]: p for p in json.loads((turns / "prediction-regimes.json").read_text())["points"]}
    spread = probe_run_spread(probed)
    rows = []
    for row in validation["rows"]:
        workers = row["workers"]
        rows.append({
            "environment": point_dir.parent.name, "point": point_dir.name, "workers": workers,
            "campaign": campaign.get(workers), "turns": row["error_pct"], "cap": cap,
            "runs": len(row["measured_runs"]), "probe_runs": len(probed.get(workers, [])),
            "in_run_range": every_run_in_range(row, regimes, spread),
            "cpu_saturated": bool(row.get("cpu_saturated")),
        })
    return rows


def summary(errors: list[float]) -> str:
    if not errors:
        return "-"
    absolute = [abs(e) for e in errors]
    return f"{statistics.median(absolute):.1f}% / {max(absolute):.1f}%, {sum(e > 8 for e in absolute)} over 8%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    args = parser.parse_args()
    points = sorted(p.parent.parent for p in args.root.glob("*/*/turns/validation.json"))
    key = {name: index for index, name in enumerate(WORST_FIRST)}
    points.sort(key=lambda p: (key.get(f"{p.parent.name}/{p.name}", len(key)), p.parent.name, p.name))
    rows = [r for p in points for r in point_rows(p) if not r["cpu_saturated"]]
    print("| environment | point | workers | A (campaign) | TT (in turns) | runs, model / probe | cap | "
          "every run in one run's range |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        campaign = "-" if r["campaign"] is None else f"{r['campaign']:+.1f}%"
        within = {True: "yes", False: "no", None: ""}[r["in_run_range"]]
        print(f"| {r['environment']} | {r['point']} | {r['workers']} | {campaign} | {r['turns']:+.1f}% | "
              f"{r['runs']} / {r['probe_runs']} | {r['cap']} | {within} |")
    print()
    groups = {"the four worst first": [r for r in rows if f"{r['environment']}/{r['point']}" in WORST_FIRST],
              "the others": [r for r in rows if f"{r['environment']}/{r['point']}" not in WORST_FIRST]}
    for env in sorted({r["environment"] for r in rows}):
        groups[env] = [r for r in rows if r["environment"] == env]
    groups["all"] = rows
    print("| rows | count | A: median / max | TT: median / max | every run in one run's range |")
    print("|---|---|---|---|---|")
    for name, selected in groups.items():
        both = [r for r in selected if r["campaign"] is not None]
        ranged = [r["in_run_range"] for r in selected if r["in_run_range"] is not None]
        print(f"| {name} | {len(selected)} | {summary([r['campaign'] for r in both])} | "
              f"{summary([r['turns'] for r in selected])} | {sum(ranged)} of {len(ranged)} |")


if __name__ == "__main__":
    main()
