"""How fast the upload backlog that a step's requests wait behind may grow: replay validated
points with a request queue and each candidate ``LinkConfig.request_queue_growth``, against their measurements.

    python benchmarks/request_queue_fit.py ROOT [--queue SECONDS] [--growth G1,G2,...] [--seeds N]
        [--variant FOLDER] [POINT ...]

ROOT is an environment campaign's folder; each POINT (default: the three settled points behind
CUBIC's 100 ms buffer) is ``<environment>/<model>-<bandwidth>`` and its ``FOLDER`` (default
``twin-probe``) holds a validation made without the wait: its ``prediction.json`` gives the link
(fitted efficiencies, latency) and the replay settings, ``graph.json`` the step, and
``validation.json`` the measured rates. Each point is replayed with that link plus a request
queue of ``--queue`` seconds (default 0.095: the 100 ms buffer less the latency's 5 ms), without
the calibration being fitted again, for 1 to 4 workers over ``--seeds`` seeds (default 6). Prints
per growth each point's errors and the two-worker range over seeds, and the median and largest
error over all rows. ``none`` as a growth is the replay without the wait. Prints figures; not a test.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from replay.engine.link import REQUEST_QUEUE_GROWTH, LinkConfig  # noqa: E402
from replay.engine.loop import DurationModel, one_step_time_s, simulate  # noqa: E402
from replay.sweep import ReplaySettings, prepare  # noqa: E402
from tracetool.graph.stepgraph import load_stepgraph  # noqa: E402

SETTLED_POINTS = ("cubic-100ms/inception-25mbit", "cubic-100ms/alexnet-25mbit", "cubic-100ms/alexnet-50mbit")
WORKERS = (1, 2, 3, 4)


def recorded_link(prediction: dict) -> LinkConfig:
    """The link a prediction.json replayed, as a LinkConfig."""
    raw = dict(prediction["link"])
    raw["worker_bandwidths_bps"] = tuple(raw.get("worker_bandwidths_bps") or ())
    raw["contention_by_workers"] = tuple(tuple(pair) for pair in raw.get("contention_by_workers") or ())
    raw["reverse_by_workers"] = tuple(tuple(entry) for entry in raw.get("reverse_by_workers") or ())
    return LinkConfig(**{k: v for k, v in raw.items() if k in LinkConfig.__dataclass_fields__})


def recorded_settings(prediction: dict) -> ReplaySettings:
    raw = {k: v for k, v in prediction["settings"].items() if k in ReplaySettings.__dataclass_fields__}
    raw["worker_speeds"] = tuple(raw.get("worker_speeds") or ())
    if raw.get("overtake_time_s") is None:
        raw.pop("overtake_time_s", None)
    return ReplaySettings(**raw)


def replayed_rates(folder: Path, request_queue_s: float, growth: float, seeds: int) -> dict[int, list[float]]:
    """Steps/s per worker count and seed, as the sweep replays them (workers spread over one step)."""
    prediction = json.loads((folder / "prediction.json").read_text())
    link = replace(recorded_link(prediction), request_queue_s=request_queue_s, request_queue_growth=growth)
    settings = recorded_settings(prediction)
    compiled, link, sharing, order, calibration = prepare(load_stepgraph(folder / "graph.json"), link, settings)
    one_step = one_step_time_s(compiled, link, sharing=sharing, order=order, compute_scale=calibration.compute_scale)
    durations = DurationModel(compute_scale=calibration.compute_scale)
    return {n: [simulate(compiled, n, link.for_workers(n), sharing=sharing, order=order, durations=durations,
                         measured_steps=settings.measured_steps, warmup_steps=settings.warmup_steps, seed=seed,
                         stagger_s=one_step).steps_per_second for seed in range(seeds)]
            for n in WORKERS}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("points", nargs="*", default=list(SETTLED_POINTS))
    parser.add_argument("--queue", type=float, default=0.095)
    parser.add_argument("--growth", default="none,0.1,0.2,0.25,0.3,0.35,0.5")
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--variant", default="twin-probe")
    args = parser.parse_intermixed_args()
    measured = {}
    for point in args.points:
        rows = json.loads((args.root / point / args.variant / "validation.json").read_text())["rows"]
        measured[point] = {row["workers"]: row["measured"] for row in rows}
    for growth in args.growth.split(","):
        errors: list[float] = []
        line = f"growth {growth:>5}:"
        for point in args.points:
            rates = replayed_rates(args.root / point / args.variant, 0.0 if growth == "none" else args.queue,
                                   REQUEST_QUEUE_GROWTH if growth == "none" else float(growth), args.seeds)
            point_errors = [100 * (statistics.fmean(rates[n]) / measured[point][n] - 1) for n in WORKERS]
            errors += [abs(e) for e in point_errors]
            line += (f"  {point.split('/')[-1]} " + " ".join(f"{e:+5.1f}" for e in point_errors)
                     + f" [{min(rates[2]):.2f}-{max(rates[2]):.2f}]")
        print(f"{line}  median {statistics.median(errors):.1f}% max {max(errors):.1f}%", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
