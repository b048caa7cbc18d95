"""Re-predict validated campaign points from their saved runs with the checkout's validate, and
show each row's error before and after: how a change to the replay or to the link fit moves the
table without running a cluster again.

    python benchmarks/repredict_saved.py ROOT [--folder settled-here,settled-twin-probe,settled] [--suffix now]
        [--validate-options=--request-queue] [POINT ...]

ROOT is an environment campaign's folder; each POINT (default: every ``<environment>/<model>-
<bandwidth>`` with a validation in one of ``--folder``, the first that has one, as
``turns_table.py`` takes them) is validated again from that folder's step graph, measurement and
link probe (``validate --from-profile --from-measured --from-link-probe`` with the checkout's
defaults: no cluster, about 2-5 s a point; with ``--request-queue``, the standing queue that
validation measured, not measured again, and none where it measured none) into ``<point>/<folder>-<suffix>/``, which
``turns_table.py --prediction SUFFIX`` then tabulates. "Before" is the table's error of today:
``<folder>-bucket/`` where the runs were predicted again with the shaper's bucket, else the
folder's own. ``--validate-options`` adds options to every validate (e.g. ``--request-queue``:
the points as predicted with the request queue's fitted wait, validate's default until it was
turned off). Prints figures; not a test.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bucket_repredict import has_saved_runs, revalidate  # noqa: E402
from turns_table import errors_of, first_validated  # noqa: E402

from tracetool.measure.validate import REQUEST_QUEUE_KEY  # noqa: E402


def probe_with_recorded_queue(folder: Path, scratch: Path) -> Path:
    """The folder's link probe, carrying the request queue its validation measured where the probe
    does not hold it: validate then replays that queue instead of probing the network again."""
    probe_file = folder / "link-probe.json"
    probe = json.loads(probe_file.read_text())
    recorded = json.loads((folder / "validation.json").read_text()).get(REQUEST_QUEUE_KEY)
    if recorded is None or probe.get(REQUEST_QUEUE_KEY) is not None:
        return probe_file
    copy = scratch / f"{folder.parent.parent.name}-{folder.parent.name}-link-probe.json"
    copy.write_text(json.dumps({**probe, REQUEST_QUEUE_KEY: recorded}))
    return copy


def summary(rows: list[float]) -> str:
    absolute = [abs(e) for e in rows]
    return (f"median {statistics.median(absolute):.1f}%, max {max(absolute):.1f}%, "
            f"over 8% {sum(e > 8 for e in absolute)}")


def repredict_point(args: argparse.Namespace, folders: list[str], point: str, scratch: Path,
                    before: dict[str, list[float]], after: dict[str, list[float]]) -> None:
    """Predict one point's saved runs again, print its rows before and after, and add them to the
    environment's lists."""
    point_dir = args.root / point
    folder = first_validated(point_dir, folders)
    if folder is None or not has_saved_runs(point_dir / folder):
        print(f"{point}: no saved runs in {args.folder}; skipped", file=sys.stderr)
        return
    bucket = point_dir / f"{folder}-bucket" / "validation.json"
    old = errors_of(bucket if bucket.is_file() else point_dir / folder / "validation.json")
    new = revalidate(point_dir / folder, point_dir / f"{folder}-{args.suffix}", burst=True,
                     link_probe=probe_with_recorded_queue(point_dir / folder, scratch),
                     options=tuple(args.validate_options.split()))
    environment = point.split("/")[0]
    for n in sorted(new):
        before.setdefault(environment, []).append(old[n])
        after.setdefault(environment, []).append(new[n])
    shown = "  ".join(f"{n}: {old[n]:+5.1f} -> {new[n]:+5.1f}" for n in sorted(new))
    print(f"{point:32} {shown}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("points", nargs="*")
    parser.add_argument("--folder", default="settled-here,settled-twin-probe,settled")
    parser.add_argument("--suffix", default="now")
    parser.add_argument("--validate-options", default="", help="more options for every validate, one string")
    args = parser.parse_intermixed_args()
    folders = args.folder.split(",")
    points = args.points or sorted({str(p.parent.parent.relative_to(args.root))
                                    for f in folders for p in args.root.glob(f"*/*/{f}/validation.json")})
    before: dict[str, list[float]] = {}
    after: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="repredict-") as scratch:
        for point in points:
            repredict_point(args, folders, point, Path(scratch), before, after)
    for environment in sorted(after):
        print(f"{environment}: before {summary(before[environment])}; after {summary(after[environment])}")
    every_before = [e for rows in before.values() for e in rows]
    every_after = [e for rows in after.values() for e in rows]
    if every_after:
        print(f"all {len(every_after)} rows: before {summary(every_before)}; after {summary(every_after)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
