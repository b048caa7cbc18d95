"""Speed of the replay engine: simulated ops per second of wall time, and full sweeps.

Prints figures; not a test. Run from the repository root:

    python benchmarks/bench_replay.py [--jobs 2] [--graphs traces/*/graph.json]
    python benchmarks/bench_replay.py --kernel-only [--sweep-1024] [--memory-4096]

The first part sets the compiled kernel (replay.engine.kernel) against the Python engine on the
largest graph at 1, 32, 256 and 1024 workers, fair, fifo and seniority sharing, after timing the
kernel's first call apart: compiling it from scratch (in a fresh process with an empty numba
cache) and loading it from the cache. ``--sweep-1024`` times the 1, 2, 4, ..., 1024 worker sweep
under fair and under seniority sharing (the default); ``--memory-4096`` replays 1024, 2048 and
4096 workers in fresh processes and prints their peak memory, which should grow linearly.

It measures the checkout it lives in, whatever copy of the package is installed.
"""

from __future__ import annotations

import argparse
import glob
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import replay  # noqa: E402
from replay.engine.compiled import compile_graph  # noqa: E402
from replay.engine.kernel import simulate_fast  # noqa: E402
from replay.engine.link import target_link  # noqa: E402
from replay.engine.loop import DurationModel, one_step_time_s, simulate  # noqa: E402
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


# Timed in a fresh interpreter: the first call of the kernel (compiling it, or loading it from
# the cache), then a second identical call (warm).
FIRST_CALL = """
import sys, time
sys.path.insert(0, {root!r})
began = time.perf_counter()
from replay.engine.compiled import compile_graph
from replay.engine.kernel import simulate_fast
from replay.engine.link import target_link
from replay.engine.loop import DurationModel
from tracetool.graph.stepgraph import load_stepgraph
graph = load_stepgraph({graph!r})
compiled, link = compile_graph(graph), target_link(graph, 1e9)
imported = time.perf_counter()
simulate_fast(compiled, 1, link, durations=DurationModel(deterministic=True), measured_steps=1, warmup_steps=0)
first = time.perf_counter()
simulate_fast(compiled, 1, link, durations=DurationModel(deterministic=True), measured_steps=1, warmup_steps=0)
print(imported - began, first - imported, time.perf_counter() - first)
"""


def first_call_s(path: Path, cache_dir: str | None) -> tuple[float, float, float]:
    """(import, first call, second call) seconds in a fresh process; ``cache_dir`` None: numba's own cache."""
    env = dict(os.environ)
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = cache_dir
    root = str(Path(__file__).resolve().parent.parent)
    out = subprocess.run([sys.executable, "-c", FIRST_CALL.format(root=root, graph=str(path))], env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    return float(out[0]), float(out[1]), float(out[2])


def kernel_against_reference(path: Path, steps: int, worker_counts: tuple[int, ...]) -> None:
    """ops/s of the kernel next to the reference on one graph, 1 Gbit/s, sampled durations."""
    from replay.engine.sharing import sharing_model

    with tempfile.TemporaryDirectory() as empty:
        imported, cold, warm = first_call_s(path, empty)
    _, cached, _ = first_call_s(path, None)
    print(f"compiled kernel, first call: {cold:.1f} s compiling from scratch, {cached:.2f} s loading numba's cache; "
          f"then {warm * 1e3:.1f} ms for the same one-step replay (imports {imported:.1f} s)")
    graph = load_stepgraph(path)
    compiled = compile_graph(graph)
    link = target_link(graph, 1e9)
    simulate_fast(compiled, 1, link, measured_steps=1)  # load the kernel in this process
    print(f"{path.parent.name} ({compiled.n} nodes), 1 Gbit/s, {steps} measured steps per worker, sampled durations:")
    print(f"{'sharing':>8} {'workers':>7} {'ops':>11} {'kernel ops/s':>13} {'reference ops/s':>16} {'speed-up':>8} "
          f"{'same result':>11}")
    for name in ("fair", "fifo", "seniority"):  # seniority: the default, with its default weight and overtakes
        sharing = sharing_model(name)
        stagger = one_step_time_s(compiled, link, sharing=sharing)
        for workers in worker_counts:
            kwargs = dict(sharing=sharing, durations=DurationModel(), measured_steps=steps, stagger_s=stagger)
            began = time.perf_counter()
            fast = simulate_fast(compiled, workers, link, **kwargs)
            kernel_s = time.perf_counter() - began
            began = time.perf_counter()
            reference = simulate(compiled, workers, link, **kwargs)
            reference_s = time.perf_counter() - began
            ops = reference.simulated_ops
            print(f"{name:>8} {workers:>7} {ops:>11,} {fast.simulated_ops / kernel_s:>13,.0f} "
                  f"{ops / reference_s:>16,.0f} {reference_s / kernel_s:>7.0f}x {str(fast == reference):>11}")


def sweep_to_1024(path: Path, jobs: int, sharing: str) -> None:
    """A 1 to 1024 worker sweep (powers of two) of one graph, default steps and seeds, on the kernel."""
    graph = load_stepgraph(path)
    workers = [2**k for k in range(11)]
    settings = ReplaySettings(sharing=sharing, engine="compiled", jobs=jobs)
    began = time.perf_counter()
    prediction = predict(graph, workers, target_link(graph, 1e9), settings)
    wall = time.perf_counter() - began
    ops = sum(p.simulated_ops for p in prediction.points)
    print(f"  sweep 1,2,4,...,1024 workers, {sharing}, compiled, jobs {jobs}: {wall:6.1f} s wall, {ops:>13,} ops, "
          f"{ops / wall:>12,.0f} ops/s")


# One kernel replay in a fresh interpreter, so that its peak resident memory is its own.
ONE_REPLAY = """
import sys, time
sys.path.insert(0, {root!r})
from replay.engine.compiled import compile_graph
from replay.engine.kernel import simulate_fast
from replay.engine.link import target_link
from replay.engine.loop import DurationModel
from replay.engine.sharing import sharing_model
from tracetool.graph.stepgraph import load_stepgraph
graph = load_stepgraph({graph!r})
compiled, link = compile_graph(graph), target_link(graph, 1e9)
simulate_fast(compiled, 1, link, measured_steps=1)

def kib(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1])

with open("/proc/self/clear_refs", "w") as reset:  # the peak from here on is the replay's
    reset.write("5")
before = kib("VmRSS:")
began = time.perf_counter()
result = simulate_fast(compiled, {workers}, link, sharing=sharing_model({sharing!r}), durations=DurationModel(),
                       measured_steps=1, warmup_steps=1, stagger_s=0.5)
wall = time.perf_counter() - began
print(result.simulated_ops, wall, before, kib("VmHWM:"))
"""


def memory_to_4096(path: Path) -> None:
    """Peak memory and speed of one kernel replay of 1024, 2048 and 4096 workers (two steps each)."""
    root = str(Path(__file__).resolve().parent.parent)
    print("one replay per process, 2 steps per worker (peak resident memory of the process while it replays "
          "(Linux's VmHWM, reset first), and what the replay added to it):")
    for sharing in ("fair", "fifo", "seniority"):
        for workers in (1024, 2048, 4096):
            script = ONE_REPLAY.format(root=root, graph=str(path), workers=workers, sharing=sharing)
            out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True)
            ops, wall, before, peak = out.stdout.split()
            print(f"  {sharing:>9} {workers:>5} workers: {int(ops):>10,} ops in {float(wall):5.2f} s "
                  f"({int(ops) / float(wall):>10,.0f} ops/s), peak {int(peak) / 1024:6.0f} MiB "
                  f"(+{(int(peak) - int(before)) / 1024:5.0f} MiB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs", nargs="*", default=sorted(glob.glob("traces/*/graph.json")))
    parser.add_argument("--jobs", type=int, default=default_jobs())
    parser.add_argument("--steps", type=int, default=None, help="measured steps per worker (default: the tool's)")
    parser.add_argument("--every-n", action="store_true", help="also sweep every worker count 1..64 (minutes)")
    parser.add_argument("--kernel-only", action="store_true", help="only the compiled kernel against the reference")
    parser.add_argument("--kernel-steps", type=int, default=5,
                        help="measured steps per worker in the kernel comparison (default %(default)s)")
    parser.add_argument("--sweep-1024", action="store_true",
                        help="also time a 1 to 1024 worker sweep on the kernel (fair and seniority)")
    parser.add_argument("--memory-4096", action="store_true",
                        help="also replay 1024, 2048 and 4096 workers on the kernel and print their peak memory")
    args = parser.parse_args()
    paths = [Path(p) for p in args.graphs]
    if not paths:
        raise SystemExit("no step graphs found; give --graphs")

    print(f"replay package: {Path(replay.__file__).parent}")
    largest = max(paths, key=lambda p: len(load_stepgraph(p).nodes))
    kernel_against_reference(largest, args.kernel_steps, (1, 32, 256, 1024))
    if args.sweep_1024:
        for sharing in ("fair", "seniority"):
            sweep_to_1024(largest, args.jobs, sharing)
    if args.memory_4096:
        memory_to_4096(largest)
    if args.kernel_only:
        return
    print()
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

    graph = load_stepgraph(largest)
    base = ReplaySettings(engine="python") if args.steps is None else ReplaySettings(measured_steps=args.steps,
                                                                                    engine="python")
    print()
    print(
        f"sweeps on the largest graph ({largest.parent.name}, {len(graph.nodes)} nodes), 1 Gbit/s, fair, "
        "Python engine, "
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
