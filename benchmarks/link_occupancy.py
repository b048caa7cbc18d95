"""How many workers have a transfer in flight on each direction of the PS link, real against replayed.

A link-bound cluster loses throughput whenever a direction of the PS link has nothing to carry.
Whether that happens, and what the workers are doing meanwhile, is the clearest difference
between a real multi-worker run and the replay's synthetic timeline, so this script reads both
into the same per-worker states and prints, per direction:

- the share of time with 0, 1, 2, ... workers' transfers in flight (request to arrival, as
  TensorFlow traces a ``RecvTensor``);
- while the direction has nothing in flight, the most common combinations of what the workers
  do: ``D`` downloading, ``U`` uploading, ``B`` both, ``c`` computing, ``g`` none of these
  (between steps, or waiting on the PS).

Real side: the concurrently traced steps of ``tracetool measure --trace-steps K``
(``OUT/traces/workers-N``), on the common window where every worker was tracing. Tracing
lengthens the gap between a worker's steps, so ``g`` is larger there than in an untraced run.
Synthetic side: a ``timeline-N.json`` of ``replay predict``. Prints figures; not a test:

    python benchmarks/link_occupancy.py --real OUT/traces/workers-3 --synthetic PRED/timeline-3.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tracetool.graph.read_runmetadata import read_runmetadata  # noqa: E402
from tracetool.graph.trace_records import job_of  # noqa: E402

# per worker: kind ("down", "up", "compute") -> list of (start_us, end_us)
Intervals = dict[int, dict[str, list[tuple[float, float]]]]
KINDS = ("down", "up", "compute")


def _empty() -> dict[str, list[tuple[float, float]]]:
    return {k: [] for k in KINDS}


def real_intervals(folder: Path) -> tuple[Intervals, float, float]:
    """Transfers and worker ops of every traced step, on the machine's clock, and the window
    in which all workers were tracing."""
    intervals: Intervals = {}
    spans: dict[int, tuple[float, float]] = {}
    for worker_dir in sorted(folder.glob("worker-*")):
        worker = int(worker_dir.name.rsplit("-", 1)[1])
        mine = intervals.setdefault(worker, _empty())
        for path in sorted(worker_dir.glob("step-*.runmeta.pb")):
            records = read_runmetadata(path).records
            for r in records:
                if r.transfer is not None:
                    if r.transfer.bytes > 0:
                        kind = "down" if job_of(r.transfer.src_device) == "ps" else "up"
                        mine[kind].append((r.start_us, r.end_us))
                elif job_of(r.device) == "worker" and r.duration_us > 0:
                    mine["compute"].append((r.start_us, r.end_us))
            lo, hi = min(r.start_us for r in records), max(r.end_us for r in records)
            old = spans.get(worker, (lo, hi))
            spans[worker] = (min(old[0], lo), max(old[1], hi))
    if not spans:
        raise SystemExit(f"error: no worker-*/step-*.runmeta.pb under {folder}; "
                         "trace a cluster with 'tracetool measure --trace-steps K'")
    return intervals, max(s[0] for s in spans.values()), min(s[1] for s in spans.values())


def synthetic_intervals(path: Path, skip_steps: int) -> tuple[Intervals, float, float]:
    """The same intervals from a replay timeline: transfers from request to arrival, in the
    window after every worker's first ``skip_steps`` steps (all workers start together, which
    no real cluster in steady state does) until the first worker's last recorded step ends."""
    events = json.loads(path.read_text())["traceEvents"]
    intervals: Intervals = {}
    step_ends: dict[int, list[float]] = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "step":
            _, worker, _, _ = e["args"]["name"].split()
            step_ends.setdefault(int(worker), []).append(e["ts"] + e["dur"])
        if e.get("ph") != "X" or "worker" not in e.get("args", {}):
            continue
        args, mine = e["args"], intervals.setdefault(e["args"]["worker"], _empty())
        if e.get("cat") == "Transfer":
            if args.get("bytes", 0) > 0:
                kind = "down" if e["tid"] < 500 else "up"
                mine[kind].append((e["ts"] - args.get("queued_us", 0.0), args["arrival_us"]))
        elif e.get("cat") == "Op" and "/job:worker" in args.get("device", "") and e["dur"] > 0:
            mine["compute"].append((e["ts"], e["ts"] + e["dur"]))
    if not intervals:
        raise SystemExit(f"error: {path} has no worker transfers; give a timeline-N.json of 'replay predict'")
    ends = {w: sorted(v) for w, v in step_ends.items()}
    if len(ends) < len(intervals) or min(len(v) for v in ends.values()) <= skip_steps + 1:
        raise SystemExit(f"error: {path} records too few steps per worker to skip {skip_steps}; "
                         "lower --skip-steps or replay more steps")
    lo = max(v[skip_steps - 1] if skip_steps else 0.0 for v in ends.values())
    return intervals, lo, min(v[-1] for v in ends.values())


def worker_states(intervals: Intervals, lo: float, hi: float, bin_us: float) -> dict[int, np.ndarray]:
    """One letter per time bin and worker (see the module docstring); transfers win over compute."""
    centres = np.arange(lo, hi, bin_us) + bin_us / 2
    states = {}
    for worker, kinds in intervals.items():
        active = {}
        for kind in KINDS:
            mask = np.zeros(len(centres), dtype=bool)
            for start, end in kinds[kind]:
                mask[np.searchsorted(centres, start):np.searchsorted(centres, end)] = True
            active[kind] = mask
        letters = np.full(len(centres), "g")
        letters[active["compute"]] = "c"
        letters[active["down"]] = "D"
        letters[active["up"]] = "U"
        letters[active["down"] & active["up"]] = "B"
        states[worker] = letters
    return states


def report(label: str, intervals: Intervals, lo: float, hi: float, bin_us: float) -> None:
    states = worker_states(intervals, lo, hi, bin_us)
    workers = sorted(states)
    combos = ["".join(sorted(states[w][i] for w in workers)) for i in range(len(states[workers[0]]))]
    total = len(combos)
    print(f"{label}: {len(workers)} workers, {(hi - lo) / 1e6:.2f} s")
    for direction, letters in (("down", "DB"), ("up", "UB")):
        in_flight = Counter(sum(ch in letters for ch in c) for c in combos)
        shares = "  ".join(f"{k}: {in_flight.get(k, 0) / total:5.1%}" for k in range(len(workers) + 1))
        idle = Counter(c for c in combos if not any(ch in letters for ch in c))
        common = ", ".join(f"{c} {n / total:.1%}" for c, n in idle.most_common(4))
        print(f"  {direction:<4} workers in flight  {shares}   idle while: {common}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--real", type=Path, help="OUT/traces/workers-N of tracetool measure --trace-steps")
    parser.add_argument("--synthetic", type=Path, help="timeline-N.json of replay predict")
    parser.add_argument("--skip-steps", type=int, default=2,
                        help="synthetic side: steps per worker left out at the start (default 2)")
    parser.add_argument("--bin-ms", type=float, default=1.0, help="time resolution (default 1 ms)")
    args = parser.parse_args()
    if not args.real and not args.synthetic:
        parser.error("give --real, --synthetic or both")
    sources = (("real", args.real, real_intervals),
               ("synthetic", args.synthetic, lambda p: synthetic_intervals(p, args.skip_steps)))
    for label, path, load in sources:
        if path is None:
            continue
        if not path.exists():
            raise SystemExit(f"error: {path} does not exist")
        intervals, lo, hi = load(path)
        report(f"{label} ({path})", intervals, lo, hi, args.bin_ms * 1e3)


if __name__ == "__main__":
    main()
