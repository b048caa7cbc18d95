"""Fit the replay's overtake law to measured clusters, leaving one model out at a time.

Why: a joining connection overtakes the incumbents at a chance that a one-worker profile cannot
show. The network probe (``tracetool.measure.link_probe``) fits one constant for short transfers, but for
long ones it keeps bunching where TensorFlow's clusters keep a pipeline (three workers of mlp's
shape at 100mbit: the probe 1.0-1.14 steps/s with one TCP or gRPC connection per direction,
TensorFlow 1.16-1.21 in six runs out of six). So the law is fitted to the measured clusters
themselves, and judged on models it was not fitted to.

The law: chance = min(cap, time / T), where T is how long one step's transfers in a direction
take alone on the link. For every validation point (workers 2 and up, tasks under half the
machine's cores) this replays the point at a grid of constant chances once, then reads the error
of any law off that grid by interpolation; the fit minimises the rms error. With
``--leave-one-model-out`` every model is predicted with the law fitted to the others; with
``--leave-one-environment-out`` every network environment (the folder above a point in an
environment campaign: ``cubic-5ms``, ``cubic-100ms``, ``bbr-100ms``) with the law fitted to the
others. ``--variant NAME`` reads each point's ``NAME/validation.json`` (a re-prediction or a
re-probe, ``benchmarks/environment_repredict.sh``) instead of every validation.json below.

    python benchmarks/overtake_fit.py runs/final --leave-one-model-out
    python benchmarks/overtake_fit.py benchmarks/results/environments --variant reprobed \
        --leave-one-environment-out --leave-one-model-out --jobs 2
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from validation_table import CPU_SHARE_OF_MACHINE  # noqa: E402

from replay.engine.compiled import compile_graph  # noqa: E402
from replay.engine.sharing import DEFAULT_OVERTAKE, DEFAULT_OVERTAKE_TIME_S  # noqa: E402
from replay.sweep import ReplaySettings, predict  # noqa: E402
from tracetool.graph.stepgraph import load_stepgraph  # noqa: E402
from tracetool.measure.validate import measured_link  # noqa: E402

CHANCES = np.round(np.arange(0.0, 0.51, 0.05), 3)
TIMES_S = np.round(np.arange(0.005, 0.0801, 0.005), 3)
CAPS = (0.25, 0.3, 0.35, 0.4, 0.5)


@dataclass(frozen=True)
class Point:
    """One measured point and its replay error (%) at every constant chance of ``CHANCES``."""

    model: str
    bandwidth: str
    environment: str
    workers: int
    transfer_s: float
    errors_pct: np.ndarray

    def error_at(self, cap: float, time_s: float) -> float:
        return float(np.interp(min(cap, time_s / self.transfer_s), CHANCES, self.errors_pct))


def validated_reverse_efficiencies(doc: dict) -> tuple[float, float]:
    """The (download, upload) reverse efficiencies a validation predicted with (none before they existed)."""
    reverse = doc.get("reverse_efficiencies") or {}
    return float(reverse.get("download", 1.0)), float(reverse.get("upload", 1.0))


def environment_of(path: Path, variant: str | None) -> str:
    """The network environment of a point: the folder above the point's own in a campaign."""
    point_dir = path.parent.parent if variant else path.parent
    return point_dir.parent.name


def replay_points(folder: Path, seeds: int, jobs: int, variant: str | None = None) -> list[Point]:
    points = []
    found = folder.glob(f"*/*/{variant}/validation.json") if variant else folder.rglob("validation.json")
    for path in sorted(found):
        doc = json.loads(path.read_text())
        graph = load_stepgraph(path.parent / "graph.json")
        link = measured_link(graph, doc["bandwidth_bps"], doc["queue_delay_s"], doc.get("contention_efficiency", 1.0),
                             validated_reverse_efficiencies(doc))
        rows = [r for r in doc["rows"] if r["workers"] > 1
                and r["cpu_cores"] < CPU_SHARE_OF_MACHINE * (r.get("machine_cores") or os.cpu_count() or 1)]
        if not rows:
            continue
        workers = sorted(r["workers"] for r in rows)
        table = []
        for chance in CHANCES:
            settings = ReplaySettings(seeds=seeds, jobs=jobs, overtake=float(chance), overtake_time_s=math.inf)
            table.append({p.workers: p.steps_per_second for p in predict(graph, workers, link, settings).points})
        # as the replay engine reckons it for the download direction
        transfer_s = 8.0 * compile_graph(graph).download_bytes / link.download_payload_bps()
        name = Path(doc["model"]).stem
        print(f"replayed {name} at {doc['bandwidth_bps'] / 1e6:g} Mbit/s ({transfer_s * 1e3:.0f} ms per direction)",
              flush=True)
        for r in rows:
            errors = np.array([(t[r["workers"]] / r["measured"] - 1.0) * 100.0 for t in table])
            points.append(Point(name, f"{doc['bandwidth_bps'] / 1e6:g}mbit", environment_of(path, variant),
                                r["workers"], transfer_s, errors))
    return points


def rms(points: list[Point], cap: float, time_s: float) -> float:
    return math.sqrt(np.mean([p.error_at(cap, time_s) ** 2 for p in points]))


def fit(points: list[Point]) -> tuple[float, float]:
    return min(((cap, t) for cap in CAPS for t in TIMES_S), key=lambda law: rms(points, *law))


def summary(errors: list[float]) -> str:
    a = np.abs(errors)
    return f"median |error| {np.median(a):.1f}%, max {a.max():.1f}%, rms {math.sqrt(np.mean(np.square(a))):.1f}%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="+", type=Path, help="folders holding validate outputs (with graph.json)")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--leave-one-model-out", action="store_true")
    parser.add_argument("--leave-one-environment-out", action="store_true")
    parser.add_argument("--variant", help="read POINT/VARIANT/validation.json of an environment campaign")
    args = parser.parse_args()
    points = [p for folder in args.folders for p in replay_points(folder, args.seeds, args.jobs, args.variant)]
    if not points:
        sys.exit("error: no validation.json with graph.json and 2+ workers under the given folders; "
                 "run tracetool validate first")
    for constant in (0.25,):
        print(f"constant chance {constant}: " + summary([p.error_at(constant, math.inf) for p in points]))
    print(f"the replay's default, min({DEFAULT_OVERTAKE:g}, {DEFAULT_OVERTAKE_TIME_S * 1e3:g} ms / T): "
          + summary([p.error_at(DEFAULT_OVERTAKE, DEFAULT_OVERTAKE_TIME_S) for p in points]))
    cap, time_s = fit(points)
    print(f"best fit: chance = min({cap:g}, {time_s * 1e3:g} ms / T): "
          + summary([p.error_at(cap, time_s) for p in points]))
    for p in points:
        print(f"  {p.environment:<12} {p.model:<10} {p.bandwidth:>8} N={p.workers} T={p.transfer_s * 1e3:4.0f} ms "
              f"chance {min(cap, time_s / p.transfer_s):.3f} error {p.error_at(cap, time_s):+.1f}%")
    groups = [("model", lambda p: p.model)] if args.leave_one_model_out else []
    groups += [("environment", lambda p: p.environment)] if args.leave_one_environment_out else []
    for kind, key in groups:
        held_out_errors = []
        for group in sorted({key(p) for p in points}):
            law = fit([p for p in points if key(p) != group])
            errors = [p.error_at(*law) for p in points if key(p) == group]
            held_out_errors += errors
            print(f"  without {group:<12} min({law[0]:g}, {law[1] * 1e3:g} ms / T) -> {group}: "
                  + summary(errors) + " (" + " ".join(f"{e:+.1f}" for e in errors) + ")")
        print(f"held-out {kind}s: " + summary(held_out_errors))


if __name__ == "__main__":
    main()
