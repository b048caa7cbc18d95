"""The link probe of a validated point's step shape against TensorFlow's measured rates.

    python benchmarks/probe_vs_tensorflow.py ROOT ENV POINT[,POINT...] [--workers 1,2,3,4]
        [--transport tcp|grpc] [--window S] [--repeats R] [--bins]

ROOT/ENV/POINT is a ``tracetool validate`` output of an environment campaign (``ENV`` is
``<congestion control>-<queue>``, e.g. ``cubic-100ms``). For each worker count it probes the
point's step shape (bytes each way and compute, from its ``two-fresh-probes/link-probe.json``)
over the chosen transport on a fresh shaped link and prints the probe's rate against
TensorFlow's measured one and against the campaign's two raw-TCP probe runs. ``--bins`` prints
each run's rate in 2-second slices: behind deep buffers two workers start slow for 6 to 16 s
(docs/network-probe.md, "Slow starts and gRPC transfers"). No TensorFlow runs; it takes
``/tmp/tfsim-tf.lock`` for each probe run.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import statistics
from pathlib import Path

from tracetool.cluster.topology import parse_queue
from tracetool.measure import link_probe
from tracetool.measure.link_probe import probe_window_s

BIN_S = 2.0


def rate_bins(spans: list[list[tuple[float, float, float, float]]]) -> list[float]:
    """Steps/s of all workers together in consecutive slices of the window all of them cover."""
    lo, hi = max(ws[0][0] for ws in spans), min(ws[-1][3] for ws in spans)
    edges = [lo + i * BIN_S for i in range(int((hi - lo) // BIN_S) + 1)]
    return [sum(1 for ws in spans for *_, end in ws if a <= end < a + BIN_S) / BIN_S for a in edges[:-1]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("env")
    parser.add_argument("points")
    parser.add_argument("--workers", default="1,2,3,4")
    parser.add_argument("--transport", choices=link_probe.TRANSPORTS, default=link_probe.DEFAULT_TRANSPORT)
    parser.add_argument("--window", type=float, default=0.0, help="seconds (default: validate's window)")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--bins", action="store_true")
    args = parser.parse_args()
    congestion_control, queue = args.env.split("-", 1)
    counts = [int(n) for n in args.workers.split(",")]
    captured: list[list[list[tuple[float, float, float, float]]]] = []
    summarize = link_probe.summarize_spans

    def capture(spans, download_bytes, upload_bytes):  # the spans, for the bins
        captured.append(spans)
        return summarize(spans, download_bytes, upload_bytes)

    link_probe.summarize_spans = capture
    for point in args.points.split(","):
        folder = args.root / args.env / point
        probe = json.loads((folder / "two-fresh-probes" / "link-probe.json").read_text())
        measured = {r["workers"]: r["measured"] for r in json.loads((folder / "validation.json").read_text())["rows"]}
        raw: dict[int, list[float]] = {}
        for p in probe["points"]:
            raw.setdefault(p["workers"], []).append(p["steps_per_second"])
        alone_s = 1.0 / statistics.mean(raw[1])
        window_s = args.window or probe_window_s(max(counts), alone_s)
        for n in counts:
            rates = []
            for _ in range(args.repeats):
                with open("/tmp/tfsim-tf.lock", "w") as lock:
                    fcntl.flock(lock, fcntl.LOCK_EX)
                    result = link_probe.probe_point(
                        probe["bandwidth_bps"], probe["download_bytes"], probe["upload_bytes"], n, window_s,
                        link_probe.STEP_WARMUP_S, probe["compute_s"], congestion_control, parse_queue(queue),
                        args.transport)
                rates.append(result.steps_per_second)
                if args.bins:
                    print("   bins", " ".join(f"{x:.2f}" for x in rate_bins(captured[-1])), flush=True)
            mean, old = statistics.mean(rates), statistics.mean(raw[n])
            print(f"{args.env} {point} {n} worker(s): {args.transport} {mean:.3f} "
                  f"({', '.join(f'{r:.3f}' for r in rates)}), campaign's raw probe {old:.3f}, TensorFlow "
                  f"{measured[n]:.3f}; probe/TensorFlow {mean / measured[n] - 1:+.1%}, campaign's "
                  f"{old / measured[n] - 1:+.1%}", flush=True)


if __name__ == "__main__":
    main()
