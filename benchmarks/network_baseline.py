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
connections deliver; ``fit_efficiencies``) and replays the probe again with it; give that
value to ``replay predict`` / ``tracetool validate`` as ``--contention-efficiency``. With that
efficiency it then replays the probe for a range of the seniority model's ``overtake`` chance and
prints the one that fits the measured 2+ workers best (``fit_overtake``): the replay's default,
``replay.sharing.DEFAULT_OVERTAKE``, comes from these fits.

Needs root. Prints figures; not a test. Run from the repository root:

    python benchmarks/network_baseline.py --bandwidth 100mbit --megabytes 2.3 --workers 1,2,3,4 --duration 25
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from replay import LinkConfig, ReplaySettings, predict_throughput, target_link  # noqa: E402
from replay.sharing import DEFAULT_OVERTAKE  # noqa: E402
from replay.synthetic import chain_graph  # noqa: E402
from tracetool.stepgraph import StepGraph  # noqa: E402
from tracetool.topology import ShapedTopology, parse_bandwidth_bps  # noqa: E402

PORT = 5001

# The PS: one thread per worker connection; on a request byte it sends D bytes, then reads U
# bytes and acknowledges them with one byte (the "update applied" of a real step).
PS_CODE = """
import socket, sys, threading, time
D, U, n, port = map(int, sys.argv[1:5])
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(('0.0.0.0', port)); srv.listen()
blob = b'p' * D
def serve(c):
    try:
        while c.recv(1):
            c.sendall(blob)
            got = 0
            while got < U:
                d = c.recv(1 << 20)
                if not d:
                    return
                got += len(d)
            c.sendall(b'k')
    except OSError:
        pass
for _ in range(n):
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
time.sleep(10 ** 6)
"""

# A worker: steps until the deadline; prints every step's (start, download done, upload start,
# upload done) on the shared monotonic clock. The compute is a sleep: it leaves the CPU free.
WORKER_CODE = """
import socket, sys, time
addr, (D, U), (duration, warm), port = sys.argv[1], map(int, sys.argv[2:4]), map(float, sys.argv[4:6]), int(sys.argv[6])
compute = float(sys.argv[7])
for _ in range(100):
    try:
        s = socket.create_connection((addr, port)); break
    except OSError:
        time.sleep(0.1)
blob = b'g' * U
begin = time.monotonic(); spans = []
while time.monotonic() < begin + warm + duration:
    a = time.monotonic(); s.sendall(b'r'); got = 0
    while got < D:
        got += len(s.recv(1 << 20))
    b = time.monotonic()
    if compute > 0:
        time.sleep(compute)
    b2 = time.monotonic(); s.sendall(blob); s.recv(1); c = time.monotonic()
    if a >= begin + warm:
        spans.append((a, b, b2, c))
print(repr(spans))
"""


def run_point(bandwidth_bps: float, payload_bytes: int, workers: int, duration_s: float, warmup_s: float,
              compute_s: float = 0.0) -> dict:
    """One worker count on a fresh shaped topology; returns measured rates and link activity."""
    with ShapedTopology(workers, bandwidth_bps) as topo:
        ps = subprocess.Popen(topo.command_in("ps", 0, [sys.executable, "-c", PS_CODE, str(payload_bytes),
                                                        str(payload_bytes), str(workers), str(PORT)]))
        procs: list[subprocess.Popen] = [ps]
        try:
            time.sleep(0.5)
            workers_procs = [
                subprocess.Popen(topo.command_in("worker", i, [
                    sys.executable, "-c", WORKER_CODE, topo.ps.address, str(payload_bytes), str(payload_bytes),
                    str(duration_s), str(warmup_s), str(PORT), str(compute_s)]), stdout=subprocess.PIPE, text=True)
                for i in range(workers)
            ]
            procs += workers_procs
            spans = [ast.literal_eval(p.communicate(timeout=duration_s + warmup_s + 120)[0]) for p in workers_procs]
        finally:
            # also on errors and Ctrl-C: deleting a namespace does not end the processes in it
            for proc in procs:
                proc.kill()
                proc.wait()
    lo = max(s[0][0] for s in spans)
    hi = min(s[-1][3] for s in spans)
    rates = [sum(1 for *_, c in ws if lo <= c <= hi) / (hi - lo) for ws in spans]
    grid = np.linspace(lo, hi, 20_000)
    down = np.zeros(grid.shape, dtype=int)
    up = np.zeros(grid.shape, dtype=int)
    for ws in spans:
        for a, b, b2, c in ws:
            down += (grid >= a) & (grid < b)
            up += (grid >= b2) & (grid < c)
    dt = (hi - lo) / len(grid)
    ends_down = sum(1 for ws in spans for _, b, _, _ in ws if lo <= b <= hi)
    ends_up = sum(1 for ws in spans for *_, c in ws if lo <= c <= hi)
    return {
        "steps_per_second": sum(rates),
        "per_worker": rates,
        # per direction: seconds with exactly one transfer in flight, with two or more, bits delivered
        "down_alone_s": float((down == 1).sum() * dt),
        "down_contended_s": float((down >= 2).sum() * dt),
        "down_bits": 8.0 * payload_bytes * ends_down,
        "up_alone_s": float((up == 1).sum() * dt),
        "up_contended_s": float((up >= 2).sum() * dt),
        "up_bits": 8.0 * payload_bytes * ends_up,
        "down_busy": float((down > 0).mean()),
        "up_busy": float((up > 0).mean()),
        "down_concurrent": float(down[down > 0].mean()) if (down > 0).any() else 0.0,
        "up_concurrent": float(up[up > 0].mean()) if (up > 0).any() else 0.0,
    }


def fit_efficiencies(points: list[dict], payload_bps: float) -> tuple[float, float]:
    """Payload rate, as a share of the line's, while one transfer is in flight and while two or
    more are: least squares of ``bits = rate * (e1 * alone_s + e2 * contended_s)`` over every
    worker count and both directions. ``e1`` also absorbs request round trips inside a
    transfer's span; ``e2 / e1`` is what contention itself costs (the replay's
    ``contention_efficiency``)."""
    rows = [(p[f"{d}_alone_s"], p[f"{d}_contended_s"], p[f"{d}_bits"] / payload_bps)
            for p in points for d in ("down", "up")]
    a = np.array([[r[0], r[1]] for r in rows])
    b = np.array([r[2] for r in rows])
    (e1, e2), *_ = np.linalg.lstsq(a, b, rcond=None)
    return float(e1), float(e2)


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
          f"replay: {ReplaySettings().sharing} sharing (overtake {DEFAULT_OVERTAKE}), "
          f"{args.seeds} seeds, link bound {link.download_payload_bps() / (8 * payload):.3f} steps/s")
    print(f"{'N':>3} {'measured':>9} {'replay':>8} {'min':>6} {'max':>6} {'err%':>6} "
          f"{'down busy':>9} {'up busy':>8} {'in flight down/up':>18}  per worker")
    measured = []
    for n in counts:
        m = run_point(bandwidth, payload, n, args.duration, args.warmup, compute_s)
        measured.append(m)
        p = predicted[n]
        err = (p.steps_per_second - m["steps_per_second"]) / m["steps_per_second"] * 100
        print(f"{n:>3} {m['steps_per_second']:>9.3f} {p.steps_per_second:>8.3f} {p.steps_per_second_min:>6.3f} "
              f"{p.steps_per_second_max:>6.3f} {err:>+6.1f} {m['down_busy']:>9.2f} {m['up_busy']:>8.2f} "
              f"{m['down_concurrent']:>8.2f} / {m['up_concurrent']:<7.2f}  "
              f"{' '.join(f'{r:.3f}' for r in m['per_worker'])}", flush=True)
    if len(counts) < 2 or not any(m["down_contended_s"] + m["up_contended_s"] > 1.0 for m in measured):
        return
    e1, e2 = fit_efficiencies(measured, link.download_payload_bps())
    efficiency = min(1.0, max(0.1, e2 / e1))
    print(f"payload rate while one transfer is in flight {e1:.3f} of the line's, while two or more {e2:.3f}: "
          f"contention efficiency {efficiency:.3f}")
    contended = replace(link, contention_efficiency=efficiency)
    again = predict_throughput(graph, counts, contended, ReplaySettings(seeds=args.seeds, calibrate=False))
    errors = [(p.steps_per_second - m["steps_per_second"]) / m["steps_per_second"] * 100
              for p, m in zip(again, measured, strict=True)]
    print("replay with it:  " + "  ".join(f"N={p.workers} {p.steps_per_second:.3f} ({e:+.1f}%)"
                                          for p, e in zip(again, errors, strict=True)))
    best, fits = fit_overtake(graph, counts, contended, measured, args.seeds)
    for overtake, rates, rms in fits:
        print(f"overtake {overtake:.2f}: " + "  ".join(f"N={n} {r:.3f}" for n, r in zip(counts, rates, strict=True))
              + f"   rms error at 2+ workers {rms:.1f}%" + ("  <- best" if overtake == best else ""))


def fit_overtake(graph: StepGraph, counts: list[int], link: LinkConfig, measured: list[dict], seeds: int,
                 grid: tuple[float, ...] = (0.0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5)
                 ) -> tuple[float, list[tuple[float, list[float], float]]]:
    """The overtake chance whose replay of the probe is closest (rms relative error over the
    worker counts of 2 and more, where connections contend) to the measured rates."""
    fits = []
    for overtake in grid:
        points = predict_throughput(graph, counts, link, ReplaySettings(seeds=seeds, calibrate=False,
                                                                        overtake=overtake))
        rates = [p.steps_per_second for p in points]
        errors = [(r - m["steps_per_second"]) / m["steps_per_second"] * 100
                  for r, m, n in zip(rates, measured, counts, strict=True) if n >= 2]
        fits.append((overtake, rates, float(np.sqrt(np.mean(np.square(errors)))) if errors else 0.0))
    best = min(fits, key=lambda f: f[2])[0]
    return best, fits


if __name__ == "__main__":
    main()
