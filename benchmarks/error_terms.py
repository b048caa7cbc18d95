"""Where a validated row's error comes from: the replay, or the measurement of TensorFlow beside its probe.

    python benchmarks/error_terms.py ROOT [--folder turns|settled|long-windows|NEWER,settled] [--prediction now]

validate fits the replay's link to its TensorFlow probe (the model's tensors with a sleep for
the compute) until the replay of the probe's own workload meets the probe's rates, then replays
the model's step graph on that link. A row's error therefore splits into three factors,
``(1 + error) = (1 + replay) * (1 + fit) / (1 + measured)``:

- replay: the model's graph replayed against the probe's workload replayed on the same link
  (what the graph's overlap of compute and transfers, its tensor order and the regimes it falls
  into change);
- fit: the probe workload's replay against the probe's mean (the bisection's residue);
- measured: TensorFlow's mean against its probe's mean, run in turns on one link.

If the replay term is small and the measured term is spread on both sides of zero, the rows'
errors are the measurement's, and more or longer runs, not a change of the model, shrink them.
Prints every contended row of every ``ROOT/ENV/POINT/FOLDER/validation.json`` and the median,
mean and largest |term| of each. A list of folders takes, point by point, the first that holds a
validation, and ``--prediction SUFFIX`` that validation's runs as predicted again into
``FOLDER-SUFFIX/`` (``repredict_saved.py``), as ``turns_table.py`` takes them: the README's table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from turns_table import first_validated, repredicted  # noqa: E402


def row_terms(validation: dict) -> list[tuple[int, float, float, float, float]]:
    """(workers, error, replay, fit, measured) in percent for each row with a probed count."""
    fit = validation.get("link_fit") or {}
    probed = {int(n): rate for n, rate in fit.get("probe_steps_per_second", {}).items()}
    replayed = {int(n): rate for n, rate in fit.get("replayed_steps_per_second", {}).items()}
    terms = []
    for row in validation["rows"]:
        workers = row["workers"]
        if workers not in probed or workers not in replayed:
            continue
        terms.append((workers, row["error_pct"], 100 * (row["predicted"] / replayed[workers] - 1),
                      100 * (replayed[workers] / probed[workers] - 1), 100 * (row["measured"] / probed[workers] - 1)))
    return terms


def describe(name: str, values: list[float]) -> str:
    absolute = [abs(v) for v in values]
    return (f"{name}: median {statistics.median(values):+.1f}%, mean {statistics.mean(values):+.1f}%, "
            f"median |.| {statistics.median(absolute):.1f}%, max |.| {max(absolute):.1f}%")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--folder", default="turns",
                        help="each point's validation folder (default turns), or a list of them, newest first")
    parser.add_argument("--prediction", help="take each validation as predicted again into FOLDER-PREDICTION/ "
                                             "where that exists (benchmarks/repredict_saved.py --suffix)")
    args = parser.parse_args()
    folders = args.folder.split(",")
    points = sorted({f.parent.parent for name in folders for f in args.root.glob(f"*/*/{name}/validation.json")})
    chosen = [point / first_validated(point, folders) for point in points]
    files = [(repredicted(folder, args.prediction) if args.prediction else folder) / "validation.json"
             for folder in chosen]
    if not files:
        parser.error(f"no {args.root}/ENV/POINT/{args.folder}/validation.json: give the campaign's root and a "
                     "folder its points were validated into")
    print("| point | workers | error | replay | fit | measured (TensorFlow vs probe) |")
    print("|---|---|---|---|---|---|")
    every = []
    for file in files:
        point = f"{file.parent.parent.parent.name}/{file.parent.parent.name}"
        for workers, error, replay, fit, measured in row_terms(json.loads(file.read_text())):
            every.append((workers, error, replay, fit, measured))
            print(f"| {point} | {workers} | {error:+.1f}% | {replay:+.1f}% | {fit:+.1f}% | {measured:+.1f}% |")
    if not every:
        print("no row was validated against a probe")
        return
    print()
    for index, name in enumerate(("error", "replay", "fit", "measured"), start=1):
        print(describe(name, [terms[index] for terms in every]))
    for workers in sorted({terms[0] for terms in every}):
        print(f"{workers} workers: " + describe("measured", [terms[4] for terms in every if terms[0] == workers]))
    print(f"{len(every)} rows of {len(files)} points")


if __name__ == "__main__":
    main()
