"""A link profile's efficiencies: a reference step probed over the link by one to four workers, then replayed.

Why: the join trials of ``tracetool probe`` say how two bulk transfers share a direction, but
not what TensorFlow's workers lose when one direction's transfer meets the other direction's
load (a deep buffer queues its ACKs behind that data), nor what several connections lose in a
deep queue; the replay's contention and reverse efficiencies carry those. validate fits them to
a probe of the model's own step shape (``link_calibration``); fitted per model in three
networks, they turned out to belong to the network: each point predicted with the median of the
other models' fits in its network lost nothing behind BBR and the 5 ms queue
(docs/network-probe.md). So the profile probes a reference step and fits the same
efficiencies, by the same rule for deep queues: a quarter second each way with 12 ms of compute
between (the zoo's steps take 0.1 to 0.8 s each way and 7 to 17 ms of uncovered compute).

``--reference-steps`` probes several transfer times, and the replay interpolates their fits by
the model's own transfer time (``LinkProfile.efficiencies``). Two steps (0.25 and 0.8 s) were
tried on all 15 environment-bandwidths of the campaign: behind 100 ms with CUBIC the long fit
brought the long-transfer models' two-worker rows closer (vgg and alexnet at 50mbit from -22%
to -16/-18%), with BBR it predicted every row lower; medians did not move beyond the probe's
run-to-run spread, so one step stays the default.
"""

from __future__ import annotations

from collections.abc import Callable

from replay.engine.link import payload_efficiency_for_mtu
from replay.link_profile import StepFit
from tracetool.cluster.topology import QueueSize
from tracetool.errors import ToolError
from tracetool.measure.link_calibration import calibrate_link_to_probe, rates_set_contention
from tracetool.measure.link_probe import (
    DEFAULT_TRANSPORT,
    MAX_STEP_WORKERS,
    STEP_WARMUP_S,
    ProbePoint,
    link_probe_of_points,
    probe_point,
    say_point,
)

REFERENCE_TRANSFERS_S = (0.25,)  # each direction's transfer alone at the payload rate, one step each
MAX_REFERENCE_STEPS = 4
REFERENCE_COMPUTE_S = 0.012
STEP_FIT_WORKERS = tuple(range(1, MAX_STEP_WORKERS + 1))
MTU = 1500
MIN_STEP_WINDOW_S = 10.0  # each worker count's window at least, by default; --step-window
MIN_PROBE_WINDOW_S = 2.0
MAX_STEP_WINDOW_S = 600.0

# Runs the reference step on this many workers at once for a window of seconds (after a warm-up)
# and reads the link's activity: (workers, download bytes, upload bytes, compute s, window s).
StepProber = Callable[[int, int, int, float, float], ProbePoint]


def emulated_step_prober(bandwidth_bps: float, queue: QueueSize, tcp_congestion_control: str,
                         transport: str = DEFAULT_TRANSPORT) -> StepProber:
    """Each worker count on a fresh shaped topology of this machine (``link_probe.probe_point``)."""
    def probe(workers: int, download: int, upload: int, compute_s: float, window_s: float) -> ProbePoint:
        return probe_point(bandwidth_bps, download, upload, workers, window_s, STEP_WARMUP_S, compute_s,
                           tcp_congestion_control, queue, transport)
    return probe


def parse_reference_steps(text: str) -> tuple[float, ...]:
    """``--reference-steps``: transfer seconds, comma-separated, each step once, refused in one line."""
    try:
        steps = tuple(sorted(float(part) for part in text.split(",") if part.strip()))
    except ValueError:
        steps = ()
    if (not steps or len(steps) > MAX_REFERENCE_STEPS or len(set(steps)) != len(steps)
            or not all(0.01 <= step <= 10.0 for step in steps)):
        raise ToolError(f"--reference-steps {text!r} is not 1 to {MAX_REFERENCE_STEPS} different transfer times "
                        "between 0.01 and 10 seconds, comma-separated (e.g. 0.25 or 0.25,0.8)")
    return steps


def reference_step(bandwidth_bps: float, transfer_s: float = REFERENCE_TRANSFERS_S[0]) -> tuple[int, int, float]:
    """(download bytes, upload bytes, compute seconds) of a reference step whose transfers take
    ``transfer_s`` each at this line rate's payload rate."""
    size = max(1, int(bandwidth_bps * payload_efficiency_for_mtu(MTU) * transfer_s / 8))
    return size, size, REFERENCE_COMPUTE_S


def fit_reference_steps(bandwidth_bps: float, latency_s: float, queue_s: float | None, probe: StepProber,
                        tcp_congestion_control: str, progress: Callable[[str], None] | None = None,
                        workers: tuple[int, ...] = STEP_FIT_WORKERS,
                        transfers_s: tuple[float, ...] = REFERENCE_TRANSFERS_S, repeats: int = 1,
                        min_window_s: float = MIN_STEP_WINDOW_S) -> tuple[StepFit, ...]:
    """Every reference step's fit, shortest transfers first."""
    return tuple(fit_reference_step(bandwidth_bps, latency_s, queue_s, probe, tcp_congestion_control, progress,
                                    workers, transfer_s, repeats, min_window_s) for transfer_s in sorted(transfers_s))


def fit_reference_step(bandwidth_bps: float, latency_s: float, queue_s: float | None, probe: StepProber,
                       tcp_congestion_control: str, progress: Callable[[str], None] | None = None,
                       workers: tuple[int, ...] = STEP_FIT_WORKERS,
                       transfer_s: float = REFERENCE_TRANSFERS_S[0], repeats: int = 1,
                       min_window_s: float = MIN_STEP_WINDOW_S) -> StepFit:
    """Probe one reference step ``repeats`` times at each worker count and fit the replay's
    efficiencies to every run (the fit takes each worker count's mean rate); ``latency_s`` is
    the profile's, ``queue_s`` the link's buffer (None where unknown), which decides whether the
    rates set the contention efficiency (``rates_set_contention``)."""
    from tracetool.measure.link_probe import probe_window_s

    say = progress or (lambda text: None)
    download, upload, compute_s = reference_step(bandwidth_bps, transfer_s)
    payload_bps = bandwidth_bps * payload_efficiency_for_mtu(MTU)
    window_s = probe_window_s(max(workers), 2 * transfer_s + compute_s, floor_s=min_window_s)
    say(f"  reference step: {download:,} B down, {upload:,} B up, {compute_s * 1e3:.0f} ms compute, "
        f"{', '.join(map(str, workers))} worker(s)")
    points = []
    for n in workers:
        for run in range(repeats):
            points.append(probe(n, download, upload, compute_s, window_s))
            say_point(say, points[-1], f", run {run + 1} of {repeats}" if repeats > 1 else "")
    probed = link_probe_of_points(bandwidth_bps, download, upload, compute_s, tcp_congestion_control, points,
                                  payload_bps)
    fit = calibrate_link_to_probe(probed.to_json_dict(), latency_s, replay_contention=rates_set_contention(queue_s))
    say(f"  replayed reference step: contention efficiency {fit.contention_efficiency:.3f} ({fit.contention_source}); "
        f"under the other direction's load downloads keep {fit.download_reverse_efficiency:.0%}, uploads "
        f"{fit.upload_reverse_efficiency:.0%}")
    return StepFit(fit.contention_efficiency, fit.download_reverse_efficiency, fit.upload_reverse_efficiency,
                   fit.contention_source, download, upload, compute_s, transfer_s,
                   tuple((point.workers, point.steps_per_second) for point in points))
