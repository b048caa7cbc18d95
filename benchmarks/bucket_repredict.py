"""What the shaper's token bucket changes: re-predict validated campaign points from their saved
runs, with the bucket the runs' tbf had and without it.

    python benchmarks/bucket_repredict.py ROOT [--folder settled] [--keep NAME] [POINT ...]

ROOT is an environment campaign's folder; each POINT (default: every ``<environment>/<model>-
<bandwidth>`` whose ``--folder`` holds a validation with its graph, measurement and link probe) is
validated again from those files (``validate --from-profile --from-measured --from-link-probe``:
no cluster, about 10-60 s a point), once with ``--link-burst`` and once with ``--no-link-burst``.
The validations with the bucket are kept in ``<point>/<NAME>/`` (default ``<folder>-bucket``),
the ones without it in a temporary folder. Prints each point's errors both ways, and the median,
mean and largest |error| over all rows and over the one-worker rows. Prints figures; not a test.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def has_saved_runs(folder: Path) -> bool:
    return all((folder / name).is_file() for name in ("graph.json", "link-probe.json", "measured/measured.json"))


def revalidate(folder: Path, out: Path, burst: bool, link_probe: Path | None = None,
               options: tuple[str, ...] = ()) -> dict[int, float]:
    """Each worker count's error (%) of a validation of ``folder``'s saved runs (``link_probe``:
    another link probe than the folder's own; ``options``: more of validate's)."""
    measured = json.loads((folder / "measured" / "measured.json").read_text())
    shaping = measured["shaping"]
    queue = shaping["queue"]
    workers = ",".join(str(p["workers"]) for p in measured["points"])
    command = [sys.executable, "-m", "tracetool.cli", "validate", "--model", measured["model"],
               "--bandwidth", f"{int(measured['bandwidth_bps'])}bit",
               "--queue", f"{queue['ms']}ms" if queue.get("ms") else f"{queue['bytes']}b",
               "--tcp-congestion-control", shaping["tcp_congestion_control"], "--workers", workers,
               "--from-profile", str(folder / "graph.json"), "--from-measured", str(folder / "measured/measured.json"),
               "--from-link-probe", str(link_probe or folder / "link-probe.json"),
               "--link-burst" if burst else "--no-link-burst", *options, "--out", str(out)]
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO)
    if result.returncode != 0:
        raise SystemExit(f"{folder}: validate failed: {result.stderr.strip().splitlines()[-1]}")
    rows = json.loads((out / "validation.json").read_text())["rows"]
    return {row["workers"]: row["error_pct"] for row in rows}


def summary(errors: list[dict[int, float]]) -> str:
    every = [abs(e) for point in errors for e in point.values()]
    lone = [abs(point[1]) for point in errors if 1 in point]
    lone_signed = [point[1] for point in errors if 1 in point]
    return (f"{len(every)} rows: median {statistics.median(every):.1f}%, mean {statistics.fmean(every):.2f}%, "
            f"max {max(every):.1f}%, over 5% {sum(e > 5 for e in every)}; one worker: mean |error| "
            f"{statistics.fmean(lone):.2f}%, mean {statistics.fmean(lone_signed):+.2f}%")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("points", nargs="*")
    parser.add_argument("--folder", default="settled")
    parser.add_argument("--keep", default="")
    args = parser.parse_args()
    keep = args.keep or f"{args.folder}-bucket"
    points = args.points or sorted(str(p.parent.relative_to(args.root)) for p in args.root.glob(f"*/*/{args.folder}")
                                   if has_saved_runs(p))
    with_bucket, without = [], []
    with tempfile.TemporaryDirectory() as scratch:
        for point in points:
            folder = args.root / point / args.folder
            plain = revalidate(folder, Path(scratch) / point.replace("/", "_"), burst=False)
            bucket = revalidate(folder, args.root / point / keep, burst=True)
            without.append(plain)
            with_bucket.append(bucket)
            shown = "  ".join(f"{n}: {plain[n]:+5.1f} -> {bucket[n]:+5.1f}" for n in sorted(bucket))
            print(f"{point:32} {shown}", flush=True)
    print(f"without the bucket: {summary(without)}")
    print(f"with the bucket:    {summary(with_bucket)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
