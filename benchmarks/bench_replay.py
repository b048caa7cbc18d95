"""Speed of the replay engine: simulated ops per second of wall time, and full sweeps.

Prints figures; not a test. Run from the repository root:

    python benchmarks/bench_replay.py [--jobs 2] [--graphs traces/*/graph.json]

It measures the checkout it lives in, whatever copy of the package is installed.
"""

from __future__ import annotations

import argparse
import glob
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import replay  # noqa: E402
from replay.engine.compiled import compile_graph  # noqa: E402
from replay.engine.link import target_link  # noqa: E402
from replay.engine.loop import DurationModel, simulate  # noqa: E402
from replay.sweep import ReplaySettings, default_jobs, predict  # noqa: E402
from tracetool.graph.stepgraph import load_stepgraph  # noqa: E402


def ops_per_second(path: Path, workers: int, bandwidth_bps: float, sharing: str, steps: int) -> tuple[float, int]:
    from replay.engine.sharing import sharing_model

    graph = load_stepgraph(path)
    compiled = compile_graph(graph)
    link = target_link(graph, bandwidth_bps)
    began = time.perf_counter()
    result = simulate(
        compiled,
        workers,
        link,
        sharing=sharing_model(sharing),
        durations=DurationModel(),
        measured_steps=steps,
        stagger_s=0.03,
    )
    wall = time.perf_counter() - began
    return result.simulated_ops / wall, result.simulated_ops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs", nargs="*", default=sorted(glob.glob("traces/*/graph.json")))
    parser.add_argument("--jobs", type=int, default=default_jobs())
    parser.add_argument("--steps", type=int, default=None, help="measured steps per worker (default: the tool's)")
    parser.add_argument("--every-n", action="store_true", help="also sweep every worker count 1..64 (minutes)")
    args = parser.parse_args()
    paths = [Path(p) for p in args.graphs]
    if not paths:
        raise SystemExit("no step graphs found; give --graphs")

    print(f"replay package: {Path(replay.__file__).parent}")
    print("single replays, one core (ops/s = graph nodes completed per second of wall time)")
    print(f"{'graph':<12} {'nodes':>5} {'workers':>7} {'link':>9} {'sharing':>8} {'ops':>9} {'ops/s':>10}")
    for path in paths:
        nodes = len(load_stepgraph(path).nodes)
        for workers, bandwidth, sharing in ((1, 1e9, "fair"), (16, 1e9, "fair"), (64, 1e9, "fair"), (16, 1e8, "fifo")):
            rate, ops = ops_per_second(path, workers, bandwidth, sharing, 20)
            print(
                f"{path.parent.name:<12} {nodes:>5} {workers:>7} {bandwidth / 1e9:>7g}G {sharing:>8} "
                f"{ops:>9} {rate:>10,.0f}"
            )

    largest = max(paths, key=lambda p: len(load_stepgraph(p).nodes))
    graph = load_stepgraph(largest)
    base = ReplaySettings() if args.steps is None else ReplaySettings(measured_steps=args.steps)
    print()
    print(
        f"sweeps on the largest graph ({largest.parent.name}, {len(graph.nodes)} nodes), 1 Gbit/s, fair, "
        f"{base.measured_steps} steps, {base.seeds} seeds"
    )
    sweeps = [("1,2,4,...,64", [1, 2, 4, 8, 16, 32, 64])]
    if args.every_n:
        sweeps.append(("1..64 (every N)", list(range(1, 65))))
    for label, workers in sweeps:
        for jobs in sorted({1, args.jobs}):
            settings = ReplaySettings(**{**base.__dict__, "jobs": jobs})
            began = time.perf_counter()
            prediction = predict(graph, workers, target_link(graph, 1e9), settings)
            wall = time.perf_counter() - began
            ops = sum(p.simulated_ops for p in prediction.points)
            print(f"  workers {label:<16} jobs {jobs}: {wall:6.2f} s wall, {ops:>11,} ops, {ops / wall:>10,.0f} ops/s")


if __name__ == "__main__":
    main()
