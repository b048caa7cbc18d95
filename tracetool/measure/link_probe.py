"""Network-only probe of the shaped PS link: how real TCP shares it, without TensorFlow.

N worker processes each repeat "download D bytes from the PS, compute (a sleep), upload U
bytes" over one persistent TCP connection, on the same shaped topology ``tracetool measure``
uses (one namespace per task, the PS link shaped with tbf both ways, the same TCP congestion
control). Each worker records every step's (request, download done, upload start, upload
acknowledged) on the shared monotonic clock.

What it is for: the replay engine needs one property of the link that the one-worker profile
cannot show, the *contention efficiency*: the share of a direction's rate that arrives while
two or more connections send on it at once (they overflow the shared drop-tail queue, and loss
recovery idles the line now and then). From the seconds each direction had exactly one
transfer in flight, two or more, and the bits it delivered, ``fit_contention_efficiency`` fits
it by least squares. The probe takes the model's own step shape (bytes each way, the compute
that does not overlap the transfers), since how often connections contend, and how much they
lose, depends on it.

It measures; it neither predicts nor compares.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace

import numpy as np

from tracetool.cluster.parent_death import DIE_WITH_PARENT_CODE, child_environment
from tracetool.cluster.topology import DEFAULT_QUEUE, DEFAULT_TCP_CONGESTION_CONTROL, QueueSize, ShapedTopology
from tracetool.errors import ToolError
from tracetool.measure.transports import DEFAULT_TRANSPORT, TRANSPORTS

PORT = 5001
STEP_WARMUP_S = 2.0  # steps before a probe's window opens: connections past their first slow start
MAX_STEP_WORKERS = 4  # a link profile's reference steps run one to this many workers
MAX_PROBE_REPEATS = 10

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
        time.sleep(0.05)
blob = b'g' * U; spans = []
begin = time.monotonic()
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

# (request, download done, upload start, upload acknowledged), seconds on the monotonic clock
Span = tuple[float, float, float, float]


@dataclass(frozen=True)
class ProbePoint:
    """One worker count of the probe: rates and what each direction of the link was doing."""

    workers: int
    steps_per_second: float
    per_worker_steps_per_second: list[float]
    window_s: float
    # per direction: seconds with exactly one transfer in flight, with two or more, bits delivered
    down_alone_s: float
    down_contended_s: float
    down_bits: float
    up_alone_s: float
    up_contended_s: float
    up_bits: float
    down_busy: float  # share of the window with at least one download in flight
    up_busy: float
    down_concurrent: float  # mean downloads in flight while any is
    up_concurrent: float
    # the same seconds split by whether the other direction had a transfer in flight: its data
    # queues ahead of this direction's ACKs and requests (zero in probes written before the split)
    down_alone_reverse_s: float = 0.0
    down_contended_reverse_s: float = 0.0
    up_alone_reverse_s: float = 0.0
    up_contended_reverse_s: float = 0.0


@dataclass(frozen=True)
class LinkProbe:
    """A whole probe and the contention efficiency fitted from it."""

    bandwidth_bps: float
    download_bytes: int
    upload_bytes: int
    compute_s: float
    tcp_congestion_control: str
    points: list[ProbePoint]
    alone_share: float  # payload rate while one transfer is in flight, as a share of the modelled rate
    contended_share: float  # while two or more are
    contention_efficiency: float  # contended_share / alone_share, within [0.1, 1]
    # a direction's rate while the other carries data, relative to its rate alone (fit_link_efficiencies)
    download_reverse_efficiency: float = 1.0
    upload_reverse_efficiency: float = 1.0
    transport: str = DEFAULT_TRANSPORT  # how the workers moved their bytes (TRANSPORTS)

    def to_json_dict(self) -> dict:
        return asdict(self)


def summarize_spans(spans: list[list[Span]], download_bytes: int, upload_bytes: int) -> ProbePoint:
    """Rates and link activity of the workers' step spans, over the window all of them cover."""
    if not spans or any(len(ws) < 2 for ws in spans):
        raise ToolError("a probe worker finished fewer than two steps; give the probe a longer --probe-duration")
    lo = max(ws[0][0] for ws in spans)
    hi = min(ws[-1][3] for ws in spans)
    if hi <= lo:
        raise ToolError("the probe workers' windows do not overlap; give the probe a longer --duration")
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
    return ProbePoint(
        workers=len(spans),
        steps_per_second=sum(rates),
        per_worker_steps_per_second=rates,
        window_s=hi - lo,
        down_alone_s=float((down == 1).sum() * dt),
        down_contended_s=float((down >= 2).sum() * dt),
        down_bits=8.0 * download_bytes * ends_down,
        up_alone_s=float((up == 1).sum() * dt),
        up_contended_s=float((up >= 2).sum() * dt),
        up_bits=8.0 * upload_bytes * ends_up,
        down_busy=float((down > 0).mean()),
        up_busy=float((up > 0).mean()),
        down_concurrent=float(down[down > 0].mean()) if (down > 0).any() else 0.0,
        up_concurrent=float(up[up > 0].mean()) if (up > 0).any() else 0.0,
        down_alone_reverse_s=float(((down == 1) & (up > 0)).sum() * dt),
        down_contended_reverse_s=float(((down >= 2) & (up > 0)).sum() * dt),
        up_alone_reverse_s=float(((up == 1) & (down > 0)).sum() * dt),
        up_contended_reverse_s=float(((up >= 2) & (down > 0)).sum() * dt),
    )


def _programs(transport: str, download_bytes: int, upload_bytes: int, workers: int
              ) -> tuple[list[str], Callable[[str], list[str]]]:
    """The PS's argv and each worker's (given the PS address) for one transport: ``tcp``, one
    ``sendall`` each way per step; ``grpc``, the step's bytes as gRPC calls of a few tensors
    (``grpc_probe_code``)."""
    if transport == "grpc":
        from tracetool.measure import grpc_probe_code

        downloads = ",".join(map(str, grpc_probe_code.split_bytes(download_bytes)))
        uploads = ",".join(map(str, grpc_probe_code.split_bytes(upload_bytes)))
        return ([sys.executable, "-c", DIE_WITH_PARENT_CODE + grpc_probe_code.PS_CODE, str(PORT)],
                lambda address: [sys.executable, "-c", DIE_WITH_PARENT_CODE + grpc_probe_code.WORKER_CODE, address,
                                 downloads, uploads])
    if transport != "tcp":
        raise ToolError(f"unknown probe transport {transport!r}; choose one of {', '.join(TRANSPORTS)}")
    return ([sys.executable, "-c", DIE_WITH_PARENT_CODE + PS_CODE, str(download_bytes), str(upload_bytes),
             str(workers), str(PORT)],
            lambda address: [sys.executable, "-c", DIE_WITH_PARENT_CODE + WORKER_CODE, address, str(download_bytes),
                             str(upload_bytes)])


def probe_point(bandwidth_bps: float, download_bytes: int, upload_bytes: int, workers: int, duration_s: float,
                warmup_s: float, compute_s: float = 0.0,
                tcp_congestion_control: str = DEFAULT_TCP_CONGESTION_CONTROL,
                queue: QueueSize = DEFAULT_QUEUE, transport: str = DEFAULT_TRANSPORT) -> ProbePoint:
    """One worker count on a fresh shaped topology; every process ends with the call."""
    ps_argv, worker_argv = _programs(transport, download_bytes, upload_bytes, workers)
    with ShapedTopology(workers, bandwidth_bps, tcp_congestion_control, queue) as topo:
        ps = subprocess.Popen(topo.command_in("ps", 0, ps_argv), env=child_environment())
        procs: list[subprocess.Popen] = [ps]
        try:
            time.sleep(0.5)
            worker_procs = [
                subprocess.Popen(topo.command_in("worker", i, worker_argv(topo.ps.address) + [
                    str(duration_s), str(warmup_s), str(PORT), str(compute_s)]),
                    stdout=subprocess.PIPE, text=True, env=child_environment())
                for i in range(workers)
            ]
            procs += worker_procs
            outputs = [p.communicate(timeout=duration_s + warmup_s + 120)[0] for p in worker_procs]
        except subprocess.TimeoutExpired:
            raise ToolError("a probe worker did not finish in time; is the shaped link passing traffic?") from None
        finally:
            # also on errors and Ctrl-C: deleting a namespace does not end the processes in it
            for proc in procs:
                proc.kill()
                proc.wait()
    try:
        spans = [ast.literal_eval(out) for out in outputs]
    except (ValueError, SyntaxError):
        raise ToolError("a probe worker could not reach the PS through the shaped link") from None
    return summarize_spans(spans, download_bytes, upload_bytes)


def fit_contention_efficiency(points: list[ProbePoint], payload_bps: float) -> tuple[float, float, float]:
    """``(e1, e2, E)``: payload rate as a share of ``payload_bps`` while one transfer is in flight
    (``e1``) and while two or more are (``e2``), by least squares of
    ``bits = payload_bps * (e1 * alone_s + e2 * contended_s)`` over every point and both
    directions; ``E = e2 / e1`` within [0.1, 1]. ``e1`` also absorbs each transfer's request
    round trip, which the replay models as latency, so only the ratio is what contention costs.
    Without contended time there is nothing to fit and ``E`` is 1."""
    rows = [(getattr(p, f"{d}_alone_s"), getattr(p, f"{d}_contended_s"), getattr(p, f"{d}_bits") / payload_bps)
            for p in points for d in ("down", "up")]
    a = np.array([[r[0], r[1]] for r in rows])
    b = np.array([r[2] for r in rows])
    if a[:, 1].sum() <= 0.0 or a[:, 0].sum() <= 0.0:
        e1 = float(b.sum() / a.sum(axis=None)) if a.sum() > 0 else 1.0
        return e1, e1, 1.0
    (e1, e2), *_ = np.linalg.lstsq(a, b, rcond=None)
    return float(e1), float(e2), float(min(1.0, max(0.1, e2 / e1)))


@dataclass(frozen=True)
class LinkEfficiencies:
    """The shares of the modelled payload rate a probe's directions delivered, by state."""

    alone_share: float  # one transfer in flight, the other direction quiet
    contention_efficiency: float  # two or more in flight, relative to one
    download_reverse_efficiency: float  # a download while uploads are in flight, relative to alone
    upload_reverse_efficiency: float


REVERSE_COARSE_STEP = 0.05
REVERSE_FINE_STEP = 0.005


def _grid(low: float, high: float, step: float) -> np.ndarray:
    return np.round(np.arange(max(0.1, low), min(1.0, high) + 1e-9, step), 3)


def fit_link_efficiencies(points: list[ProbePoint], payload_bps: float) -> LinkEfficiencies:
    """Fit, by least squares over every point and both directions, the model the replay runs:
    a direction delivers ``payload_bps * e1`` while one transfer is in flight, times ``E`` while
    two or more are, times its reverse efficiency ``r`` while the other direction has a transfer
    in flight (``bits = P * (e1 * (q1 + r * r1) + e1 * E * (q2 + r * r2))`` with ``q``/``r`` the
    seconds with the other direction quiet or busy). ``e1`` and ``e1 * E`` are linear; each
    direction's ``r`` is searched on a 0.05 grid in [0.1, 1], then on a 0.005 grid around the
    best. Without time in a state its factor is 1."""
    rows = []
    for p in points:
        for d in ("down", "up"):
            alone, contended = getattr(p, f"{d}_alone_s"), getattr(p, f"{d}_contended_s")
            alone_rev, contended_rev = getattr(p, f"{d}_alone_reverse_s"), getattr(p, f"{d}_contended_reverse_s")
            rows.append((d == "up", alone - alone_rev, alone_rev, contended - contended_rev, contended_rev,
                         getattr(p, f"{d}_bits") / payload_bps))
    table = np.array(rows, dtype=float)
    upload, q1, r1, q2, r2, bits = (table[:, i] for i in range(6))
    if (r1 + r2).sum() <= 0.0:
        e1, _, efficiency = fit_contention_efficiency(points, payload_bps)
        return LinkEfficiencies(e1, efficiency, 1.0, 1.0)
    has_reverse = [(r1 + r2)[upload == flag].sum() > 0.0 for flag in (False, True)]

    def residual(r_down: float, r_up: float) -> tuple[float, float, float]:
        r = np.where(upload > 0, r_up, r_down)
        a = np.column_stack([q1 + r * r1, q2 + r * r2])
        if a[:, 1].sum() <= 0.0:
            x = np.array([bits.sum() / a[:, 0].sum(), 0.0])
        else:
            x, *_ = np.linalg.lstsq(a, bits, rcond=None)
        return float(((a @ x - bits) ** 2).sum()), float(x[0]), float(x[1])

    def search(down_grid: np.ndarray, up_grid: np.ndarray) -> tuple[float, float, float, float, float]:
        return min((*residual(rd, ru), float(rd), float(ru))
                   for rd in (down_grid if has_reverse[0] else (1.0,))
                   for ru in (up_grid if has_reverse[1] else (1.0,)))

    coarse = _grid(0.1, 1.0, REVERSE_COARSE_STEP)
    _, _, _, rd, ru = search(coarse, coarse)
    _, e1, e2, r_down, r_up = search(_grid(rd - REVERSE_COARSE_STEP, rd + REVERSE_COARSE_STEP, REVERSE_FINE_STEP),
                                     _grid(ru - REVERSE_COARSE_STEP, ru + REVERSE_COARSE_STEP, REVERSE_FINE_STEP))
    efficiency = 1.0 if e2 <= 0.0 or (q2 + r2).sum() <= 0.0 else float(min(1.0, max(0.1, e2 / e1)))
    return LinkEfficiencies(e1, efficiency, r_down, r_up)


# The probe's window when none is given: at least this long, and long enough for each worker to
# finish PROBE_STEPS_PER_WORKER steps when all of them share the link (a probe point needs two).
DEFAULT_PROBE_WINDOW_S = 10.0
PROBE_STEPS_PER_WORKER = 3


def probe_window_s(workers: int, alone_step_s: float, floor_s: float = DEFAULT_PROBE_WINDOW_S) -> float:
    """Seconds of each worker count's probe window, at least ``floor_s``: N workers on one link
    take about N times a step alone (mobilenet_v2's 9 MB steps at 50mbit: 3.1 s alone, 37 s for
    4 workers)."""
    return min(3600.0, max(floor_s, PROBE_STEPS_PER_WORKER * workers * alone_step_s))


def check_probe_repeats(repeats: int, option: str = "--probe-repeats") -> None:
    """Refuse a number of probe runs per worker count outside [1, MAX_PROBE_REPEATS]."""
    if not 1 <= repeats <= MAX_PROBE_REPEATS:
        raise ToolError(f"{option} must be between 1 and {MAX_PROBE_REPEATS}, got {repeats}")


def probe_link(bandwidth_bps: float, download_bytes: int, upload_bytes: int, compute_s: float, workers: list[int],
               payload_bps: float, duration_s: float = 10.0, warmup_s: float = STEP_WARMUP_S,
               tcp_congestion_control: str = DEFAULT_TCP_CONGESTION_CONTROL,
               progress: Callable[[str], None] | None = None, queue: QueueSize = DEFAULT_QUEUE,
               repeats: int = 1, transport: str = DEFAULT_TRANSPORT) -> LinkProbe:
    """Probe the link for each worker count and fit its contention and reverse efficiencies.

    ``payload_bps`` is the payload rate the replay assumes for the link (its line rate less
    headers), so that the fitted shares are relative to what the replay would carry. With
    ``repeats`` above 1 each worker count is probed that many times on fresh topologies and
    every run is a point of the fit: one window of a few steps is noisy (vgg at 25mbit behind
    5 ms: contention efficiency 0.957 and 0.914 in two runs), and runs of three or more workers
    settle into either of two regimes, as TensorFlow's do."""
    if bandwidth_bps <= 0 or download_bytes < 1 or upload_bytes < 1 or compute_s < 0:
        raise ToolError("the link probe needs a bandwidth, bytes each way and a compute time of zero or more")
    if duration_s <= 0 or warmup_s < 0:
        raise ToolError("the link probe needs a positive --duration and no negative warm-up")
    check_probe_repeats(repeats)
    say = progress or (lambda text: None)
    points = []
    for n in workers:
        for run in range(repeats):
            point = probe_point(bandwidth_bps, download_bytes, upload_bytes, n, duration_s, warmup_s, compute_s,
                                tcp_congestion_control, queue, transport)
            which = f", run {run + 1} of {repeats}" if repeats > 1 else ""
            say_point(say, point, which)
            points.append(point)
    probe = link_probe_of_points(bandwidth_bps, download_bytes, upload_bytes, compute_s, tcp_congestion_control,
                                 points, payload_bps)
    return replace(probe, transport=transport)


def say_point(say: Callable[[str], None], point: ProbePoint, which: str = "") -> None:
    say(f"  link probe, {point.workers} worker(s){which}: {point.steps_per_second:.3f} steps/s; link busy "
        f"{point.down_busy:.0%} down, {point.up_busy:.0%} up")


def link_probe_of_points(bandwidth_bps: float, download_bytes: int, upload_bytes: int, compute_s: float,
                         tcp_congestion_control: str, points: list[ProbePoint], payload_bps: float) -> LinkProbe:
    """The probe of these points (on an emulated link or real hosts) with its least-squares fit."""
    fit = fit_link_efficiencies(points, payload_bps)
    return LinkProbe(bandwidth_bps, download_bytes, upload_bytes, compute_s, tcp_congestion_control, points,
                     fit.alone_share, fit.alone_share * fit.contention_efficiency, fit.contention_efficiency,
                     fit.download_reverse_efficiency, fit.upload_reverse_efficiency)
