"""Network-only baseline: how real TCP shares the shaped PS link, without TensorFlow.

N worker processes each repeat "download D bytes from the PS, compute (sleep ``--compute-ms``,
default 0), then upload U bytes" over one persistent TCP connection, on the same shaped
topology ``tracetool measure`` uses (one namespace per task, the PS link shaped with tbf both
ways). It prints the measured steps/s next to the replay engine's prediction for the same step
(a chain: download, a compute op of that length, upload), so the part of a validation error
that comes from TCP itself, rather than from TensorFlow or the step graph, can be read off
directly. It also prints how often each direction had at least one transfer in flight and how
many on average: a direction that is "busy" but carries less than its rate is losing to TCP
dynamics, not to a lack of work.

From the seconds each direction had exactly one transfer in flight and two or more, and the
bits it delivered, it fits the link's contention efficiency (the share of the line contending
connections deliver; ``tracetool.measure.link_probe.fit_contention_efficiency``, which
``tracetool validate --contention-efficiency probe`` runs by itself) and replays the probe again
with it. With that efficiency it then replays the probe for a range of the seniority model's
``overtake`` chance, held constant, and prints the one that fits the measured 2+ workers best
(``fit_overtake``). For transfers of about 0.1-0.2 s per direction the probe agrees with the
replay's default law; for longer ones it keeps bunching where TensorFlow's clusters keep a
pipeline, so the default law is fitted to measured clusters instead
(``benchmarks/overtake_fit.py``, docs/replay.md).

Needs root. Prints figures; not a test. Run from the repository root:

    python benchmarks/network_baseline.py --bandwidth 100mbit --megabytes 2.3 --workers 1,2,3,4 --duration 25
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from replay import LinkConfig, ReplaySettings, predict_throughput, target_link  # noqa: E402
from replay.engine.sharing import DEFAULT_OVERTAKE, DEFAULT_OVERTAKE_TIME_S  # noqa: E402
from replay.synthetic import chain_graph  # noqa: E402
from tracetool.cluster.topology import parse_bandwidth_bps  # noqa: E402
from tracetool.graph.stepgraph import StepGraph  # noqa: E402
from tracetool.measure.link_probe import ProbePoint, fit_contention_efficiency, probe_point  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bandwidth", default="100mbit")
    parser.add_argument("--megabytes", type=float, default=9.5, help="bytes each way per step, in MB")
    parser.add_argument("--workers", default="1,2,3,4")
    parser.add_argument("--duration", type=float, default=25.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--compute-ms", type=float, default=0.0,
                        help="time each worker spends between its download and its upload (a sleep)")
    parser.add_argument("--seeds", type=int, default=10, help="replay seeds per worker count")
    args = parser.parse_args()
    bandwidth = parse_bandwidth_bps(args.bandwidth)
    payload = int(args.megabytes * 1e6)
    counts = [int(n) for n in args.workers.split(",")]

    compute_s = args.compute_ms / 1e3
    graph = chain_graph(compute_us=max(100.0, compute_s * 1e6), download_bytes=payload, upload_bytes=payload)
    link = target_link(graph, bandwidth)
    predicted = {p.workers: p for p in predict_throughput(graph, counts, link, ReplaySettings(seeds=args.seeds,
                                                                                           calibrate=False))}
    print(f"{args.megabytes} MB each way per step, {args.compute_ms:g} ms compute, PS link {args.bandwidth}; "
          f"replay: {ReplaySettings().sharing} sharing (overtake min({DEFAULT_OVERTAKE}, "
          f"{DEFAULT_OVERTAKE_TIME_S * 1e3:g} ms / transfer time)), "
          f"{args.seeds} seeds, link bound {link.download_payload_bps() / (8 * payload):.3f} steps/s")
    print(f"{'N':>3} {'measured':>9} {'replay':>8} {'min':>6} {'max':>6} {'err%':>6} "
          f"{'down busy':>9} {'up busy':>8} {'in flight down/up':>18}  per worker")
    measured = []
    for n in counts:
        m = probe_point(bandwidth, payload, payload, n, args.duration, args.warmup, compute_s)
        measured.append(m)
        p = predicted[n]
        err = (p.steps_per_second - m.steps_per_second) / m.steps_per_second * 100
        print(f"{n:>3} {m.steps_per_second:>9.3f} {p.steps_per_second:>8.3f} {p.steps_per_second_min:>6.3f} "
              f"{p.steps_per_second_max:>6.3f} {err:>+6.1f} {m.down_busy:>9.2f} {m.up_busy:>8.2f} "
              f"{m.down_concurrent:>8.2f} / {m.up_concurrent:<7.2f}  "
              f"{' '.join(f'{r:.3f}' for r in m.per_worker_steps_per_second)}", flush=True)
    if len(counts) < 2 or not any(m.down_contended_s + m.up_contended_s > 1.0 for m in measured):
        return
    e1, e2, efficiency = fit_contention_efficiency(measured, link.download_payload_bps())
    print(f"payload rate while one transfer is in flight {e1:.3f} of the line's, while two or more {e2:.3f}: "
          f"contention efficiency {efficiency:.3f}")
    contended = replace(link, contention_efficiency=efficiency)
    again = predict_throughput(graph, counts, contended, ReplaySettings(seeds=args.seeds, calibrate=False))
    errors = [(p.steps_per_second - m.steps_per_second) / m.steps_per_second * 100
              for p, m in zip(again, measured, strict=True)]
    print("replay with it:  " + "  ".join(f"N={p.workers} {p.steps_per_second:.3f} ({e:+.1f}%)"
                                          for p, e in zip(again, errors, strict=True)))
    best, fits = fit_overtake(graph, counts, contended, measured, args.seeds)
    for overtake, rates, rms in fits:
        print(f"overtake {overtake:.2f}: " + "  ".join(f"N={n} {r:.3f}" for n, r in zip(counts, rates, strict=True))
              + f"   rms error at 2+ workers {rms:.1f}%" + ("  <- best" if overtake == best else ""))


def fit_overtake(graph: StepGraph, counts: list[int], link: LinkConfig, measured: list[ProbePoint], seeds: int,
                 grid: tuple[float, ...] = (0.0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5)
                 ) -> tuple[float, list[tuple[float, list[float], float]]]:
    """The overtake chance whose replay of the probe is closest (rms relative error over the
    worker counts of 2 and more, where connections contend) to the measured rates."""
    fits = []
    for overtake in grid:
        points = predict_throughput(graph, counts, link, ReplaySettings(seeds=seeds, calibrate=False,
                                                                        overtake=overtake, overtake_time_s=math.inf))
        rates = [p.steps_per_second for p in points]
        errors = [(r - m.steps_per_second) / m.steps_per_second * 100
                  for r, m, n in zip(rates, measured, counts, strict=True) if n >= 2]
        fits.append((overtake, rates, float(np.sqrt(np.mean(np.square(errors)))) if errors else 0.0))
    best = min(fits, key=lambda f: f[2])[0]
    return best, fits


if __name__ == "__main__":
    main()
