"""The environment campaign's points validated again in turns, beside the campaign's own errors.

    python benchmarks/turns_table.py ROOT [--folder turns|settled|NEWER,settled]

For each point with ``POINT/FOLDER/validation.json`` (``benchmarks/environment_turns.sh``) it
prints, per worker count, the campaign's error (column A of ``environment_table.py``, from
``POINT/more-runs-predicted/``), the error validated again in turns with 20-second windows (TT,
``POINT/turns/``) and, with another FOLDER, that validation's (``settled``: validate's 60-second
windows after 20 s of settling). Where ``FOLDER-bucket/`` holds the same runs predicted again with
the shaper's token bucket (``benchmarks/bucket_repredict.py``), the errors are that prediction's.
Then the runs each side took in FOLDER, the cap on runs that measurement had, whether every run
fell within one run's predicted range, and which TensorFlow probe the point ran
(``probe_generation``: validate's probe changed while the campaign ran); then the median and max
|error| of each column over the same rows, per environment, over the points that ran today's
probe, over the points no fit used (``held_out``), and in all. With ``--folder turns`` the four
points measured first (the campaign's worst rows) are listed apart: points chosen for being bad
regress towards their mean when measured again. ``--folder settled-here,settled-twin-probe,settled``
takes, point by point, the first of the folders that holds a validation: a point validated again
(``settled-twin-probe``: with the twin probe; ``settled-here``: on this machine's CPU, where its
settled runs ran on another) supersedes its earlier validation. ``--by-workers`` prints instead the summary the README
shows: per environment (and over the held-out rows and all rows) the median and max |error| of
the chosen folder's validations, in all and per worker count, and how many points profiled the
model afresh (validate's default) rather than replaying an older step graph (``--from-profile``).
``--by-point`` prints a line per point: its error at each worker count and the folder it came from.
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
from tracetool.measure.validation_report import one_run_range, probe_run_spread  # noqa: E402

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


# validate's TensorFlow probe, oldest first: the model's tensors with one compute after every download
# (``build_probe_loss``); the model's compute schedule (``build_twin_probe_loss``, d21220f); that schedule
# with a lone worker run whose rate sets the replayed probe's compute (ef2b6dc); today's, the step graph's
# shape (``build_graph_twin_probe_loss``, 941a7d2, validate's default since 98d1538)
TODAYS_PROBE = "graph twin"
# What a fit has seen: the defaults and the overtake law were fitted on the 5 ms CUBIC network, the
# request queue's growth on three points behind 100 ms (docs/network-probe.md). Rows elsewhere are
# held out: their errors are the ones a user on an unseen network and model can expect. The three
# points count as fitted only where their prediction replayed the request queue (validate's default
# until it was turned off).
FITTED_ENVIRONMENTS = ("cubic-5ms",)
FITTED_POINTS = ("cubic-100ms/alexnet-25mbit", "cubic-100ms/alexnet-50mbit", "cubic-100ms/inception-25mbit")


def held_out(row: dict[str, Any]) -> bool:
    return (row["environment"] not in FITTED_ENVIRONMENTS
            and not (row["request_queue"] and f"{row['environment']}/{row['point']}" in FITTED_POINTS))


def probe_generation(validation_dir: Path) -> str:
    """Which of validate's TensorFlow probes a validation ran, from the probe file it wrote and
    the worker counts its probe ran."""
    model_file = validation_dir / "probe_model.py"
    if not model_file.is_file():
        return "-"
    text = model_file.read_text()
    if "build_graph_twin_probe_loss" in text:
        return TODAYS_PROBE
    if "build_twin_probe_loss" not in text:
        return "tensors"
    probed = {p["workers"] for p in json.loads((validation_dir / "link-probe.json").read_text())["points"]}
    return "twin + lone run" if 1 in probed else "twin"


COLUMNS = {"turns": "TT (20 s in turns)", "settled": "S (60 s after 20 s)"}


def errors_of(validation_file: Path) -> dict[int, float]:
    """Each worker count's error in a validation.json, none where the file is missing."""
    if not validation_file.is_file():
        return {}
    return {r["workers"]: r["error_pct"] for r in json.loads(validation_file.read_text())["rows"]}


def repredicted(validation_dir: Path, suffix: str = "bucket") -> Path:
    """Where the validation's own runs were predicted again (``FOLDER-SUFFIX/``: with the shaper's
    token bucket by ``benchmarks/bucket_repredict.py``, or with a later checkout's validate by
    ``benchmarks/repredict_saved.py``), that prediction: the runs are the same, the prediction
    today's. Without one of SUFFIX, the bucket's, else the validation's own."""
    for name in dict.fromkeys((suffix, "bucket")):
        again = validation_dir.with_name(f"{validation_dir.name}-{name}")
        if (again / "validation.json").is_file():
            return again
    return validation_dir


def first_validated(point_dir: Path, folders: list[str]) -> str | None:
    """The first of ``folders`` in which the point holds a validation."""
    return next((f for f in folders if (point_dir / f / "validation.json").is_file()), None)


def point_rows(point_dir: Path, folders: list[str], column: str, suffix: str = "bucket") -> list[dict[str, Any]]:
    folder = first_validated(point_dir, folders)
    turns = point_dir / folder
    predicted = repredicted(turns, suffix)
    validation = json.loads((predicted / "validation.json").read_text())
    campaign = errors_of(point_dir / "more-runs-predicted" / "validation.json")
    earlier = errors_of(point_dir / "turns" / "validation.json") if folder != "turns" else {}
    cap = json.loads((turns / "measured" / "measured.json").read_text()).get("max_repeats")
    probed = rates_by_workers(json.loads((turns / "link-probe.json").read_text())["points"])
    regimes = {p["workers"]: p for p in json.loads((predicted / "prediction-regimes.json").read_text())["points"]}
    spread = probe_run_spread(probed)
    probe = probe_generation(turns)
    rows = []
    for row in validation["rows"]:
        workers = row["workers"]
        rows.append({
            "environment": point_dir.parent.name, "point": point_dir.name, "workers": workers,
            "campaign": campaign.get(workers), "turns": earlier.get(workers), column: row["error_pct"], "cap": cap,
            "runs": len(row["measured_runs"]), "probe_runs": len(probed.get(workers, [])),
            "in_run_range": every_run_in_range(row, regimes, spread),
            "cpu_saturated": bool(row.get("cpu_saturated")), "probe": probe,
            "fresh_profile": profiled_afresh(turns),
            "request_queue": bool(validation.get("request_queue_s")),
        })
    return rows


def profiled_afresh(validation_dir: Path) -> bool:
    """Whether validate profiled the model for this validation, as its defaults do, rather than
    replaying a step graph made before (``--from-profile``)."""
    measured = json.loads((validation_dir / "measured" / "measured.json").read_text())
    return "--from-profile" not in measured.get("command_line", "")


def by_workers_table(rows: list[dict[str, Any]], column: str, by_model: bool = False) -> None:
    """Median / max |error| per environment and worker count: the README's validation table;
    with ``by_model``, per model too."""
    groups = {env: [r for r in rows if r["environment"] == env] for env in sorted({r["environment"] for r in rows})}
    groups["held out (no fit used)"] = [r for r in rows if held_out(r)]
    # the points validated with validate's default twin of today, apart: the table's goal is "all with the defaults"
    groups[f"with the {TODAYS_PROBE}"] = [r for r in rows if r["probe"] == TODAYS_PROBE]
    groups["all"] = rows
    if by_model:
        # each model's rows, in every environment: one model's worst case is not hidden in the pool's median
        def model_of(row: dict[str, Any]) -> str:
            return row["point"].rsplit("-", 1)[0]  # points are named MODEL-BANDWIDTH

        for model in sorted({model_of(r) for r in rows}):
            groups[f"{model} (all environments)"] = [r for r in rows if model_of(r) == model]
    counts = sorted({r["workers"] for r in rows})
    print(f"| rows | points (profiled afresh) | median / max | "
          f"{' | '.join(f'{n} worker' + ('s' if n > 1 else '') for n in counts)} |")
    print("|---|---|---|" + "---|" * len(counts))
    for name, selected in groups.items():
        if not selected:
            continue
        points = {(r["environment"], r["point"]) for r in selected}
        fresh = {(r["environment"], r["point"]) for r in selected if r["fresh_profile"]}
        per_count = [summary([r[column] for r in selected if r["workers"] == n and r[column] is not None])
                     for n in counts]
        print(f"| {name} | {len(points)} ({len(fresh)}) | {summary([r[column] for r in selected])} | "
              f"{' | '.join(per_count)} |")


def by_point_table(points: list[Path], folders: list[str], column: str, suffix: str) -> None:
    """One line per point: its error at each worker count (a CPU-saturated row in brackets, as
    the summaries leave it out) and the folder its validation came from."""
    rows_of = {point: point_rows(point, folders, column, suffix) for point in points}
    counts = sorted({r["workers"] for rows in rows_of.values() for r in rows})
    print(f"| point | folder | {' | '.join(f'{n} worker' + ('s' if n > 1 else '') for n in counts)} |")
    print("|---|---|" + "---|" * len(counts))
    for point, rows in rows_of.items():
        errors = {r["workers"]: (f"({r[column]:+.1f}%, CPU-saturated)" if r["cpu_saturated"] else f"{r[column]:+.1f}%")
                  for r in rows}
        print(f"| {point.parent.name}/{point.name} | {first_validated(point, folders)} | "
              f"{' | '.join(errors.get(n, '-') for n in counts)} |")


def summary(errors: list[float]) -> str:
    if not errors:
        return "-"
    absolute = [abs(e) for e in errors]
    return f"{statistics.median(absolute):.1f}% / {max(absolute):.1f}%, {sum(e > 8 for e in absolute)} over 8%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--folder", default="turns",
                        help="the validations to tabulate: turns (20-second windows), settled (60 s after 20 s), "
                             "or another folder environment_turns.sh wrote (FOLDER=...)")
    parser.add_argument("--prediction", default="bucket",
                        help="take each validation's runs as predicted again into FOLDER-PREDICTION/ where that "
                             "exists (benchmarks/repredict_saved.py --suffix); default: the bucket's re-prediction")
    parser.add_argument("--by-workers", action="store_true",
                        help="print only the summary per environment and worker count (the README's table)")
    parser.add_argument("--by-model", action="store_true",
                        help="with --by-workers, a row per model too (its points in every environment)")
    parser.add_argument("--by-point", action="store_true",
                        help="a line per point instead: its error at each worker count, and the folder it came from")
    args = parser.parse_args()
    folders = args.folder.split(",")
    points = sorted({p.parent.parent for f in folders for p in args.root.glob(f"*/*/{f}/validation.json")})
    key = {name: index for index, name in enumerate(WORST_FIRST)} if args.folder == "turns" else {}
    points.sort(key=lambda p: (key.get(f"{p.parent.name}/{p.name}", len(key)), p.parent.name, p.name))
    rows = [r for p in points for r in point_rows(p, folders, args.folder, args.prediction)
            if not r["cpu_saturated"]]
    columns = {"campaign": "A (campaign)", **{f: COLUMNS.get(f, COLUMNS.get(folders[-1], f))
                                              for f in ("turns", args.folder)}}

    if args.by_point:
        by_point_table(points, folders, args.folder, args.prediction)
        return
    if args.by_workers:
        by_workers_table(rows, args.folder, args.by_model)
        return

    def cell(value: float | None) -> str:
        return "-" if value is None else f"{value:+.1f}%"

    print(f"| environment | point | workers | {' | '.join(columns.values())} | runs, model / probe | cap | "
          "every run in one run's range | probe |")
    print("|---|---|---|" + "---|" * len(columns) + "---|---|---|---|")
    for r in rows:
        within = {True: "yes", False: "no", None: ""}[r["in_run_range"]]
        print(f"| {r['environment']} | {r['point']} | {r['workers']} | "
              f"{' | '.join(cell(r[c]) for c in columns)} | {r['runs']} / {r['probe_runs']} | {r['cap']} | {within} | "
              f"{r['probe']} |")
    print()
    groups = ({"the four worst first": [r for r in rows if f"{r['environment']}/{r['point']}" in WORST_FIRST],
               "the others": [r for r in rows if f"{r['environment']}/{r['point']}" not in WORST_FIRST]}
              if key else {})
    for env in sorted({r["environment"] for r in rows}):
        groups[env] = [r for r in rows if r["environment"] == env]
    todays = [r for r in rows if r["probe"] == TODAYS_PROBE]
    if todays:
        groups[f"probe: {TODAYS_PROBE}"] = todays
    held = [r for r in rows if held_out(r)]
    if held:
        groups["held out (no fit used)"] = held
    groups["all"] = rows
    print(f"| rows | count | {' | '.join(f'{name}: median / max' for name in columns.values())} | "
          "every run in one run's range |")
    print("|---|---|" + "---|" * len(columns) + "---|")
    for name, selected in groups.items():
        ranged = [r["in_run_range"] for r in selected if r["in_run_range"] is not None]
        cells = [summary([r[c] for r in selected if r[c] is not None]) for c in columns]
        print(f"| {name} | {len(selected)} | {' | '.join(cells)} | {sum(ranged)} of {len(ranged)} |")


if __name__ == "__main__":
    main()
