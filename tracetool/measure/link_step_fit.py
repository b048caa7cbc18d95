"""A link profile's efficiencies: a reference step probed over the link by one to four workers, then replayed.

Why: the join trials of ``tracetool probe`` say how two bulk transfers share a direction, but
not what TensorFlow's workers lose when one direction's transfer meets the other direction's
load (a deep buffer queues its ACKs behind that data), nor what several connections lose in a
deep queue; the replay's contention and reverse efficiencies carry those. validate fits them to
a probe of the model's own step shape (``link_calibration``); fitted per model in three
networks, they turned out to belong to the network: each point predicted with the median of the
other models' fits in its network lost nothing behind BBR and the 5 ms queue
(docs/network-probe.md). So the profile probes one reference step, the size of a mid-sized
model's at the probed rate (a quarter second each way and 12 ms of compute between them:
the zoo's steps take 0.1 to 0.8 s each way and 7 to 17 ms of uncovered compute), and fits the
same efficiencies, by the same rule for deep queues.
"""

from __future__ import annotations

from collections.abc import Callable

from replay.engine.link import payload_efficiency_for_mtu
from replay.link_profile import StepFit
from tracetool.cluster.topology import QueueSize
from tracetool.measure.link_calibration import calibrate_link_to_probe, rates_set_contention
from tracetool.measure.link_probe import probe_link

REFERENCE_TRANSFER_S = 0.25  # each direction's transfer alone at the payload rate
REFERENCE_COMPUTE_S = 0.012
STEP_FIT_WORKERS = (1, 2, 3, 4)
MTU = 1500


def reference_step(bandwidth_bps: float) -> tuple[int, int, float]:
    """(download bytes, upload bytes, compute seconds) of the reference step at this line rate."""
    size = max(1, int(bandwidth_bps * payload_efficiency_for_mtu(MTU) * REFERENCE_TRANSFER_S / 8))
    return size, size, REFERENCE_COMPUTE_S


def fit_reference_step(bandwidth_bps: float, latency_s: float, queue: QueueSize, tcp_congestion_control: str,
                       progress: Callable[[str], None] | None = None, repeats: int = 1,
                       workers: tuple[int, ...] = STEP_FIT_WORKERS) -> StepFit:
    """Probe the reference step on the emulated link (fresh topologies, one per worker count and
    run) and fit the replay's efficiencies to it; ``latency_s`` is the profile's."""
    from tracetool.measure.validate import probe_window_s

    say = progress or (lambda text: None)
    download, upload, compute_s = reference_step(bandwidth_bps)
    payload_bps = bandwidth_bps * payload_efficiency_for_mtu(MTU)
    alone_step_s = 2 * REFERENCE_TRANSFER_S + compute_s
    say(f"  reference step: {download:,} B down, {upload:,} B up, {compute_s * 1e3:.0f} ms compute, "
        f"{', '.join(map(str, workers))} worker(s)")
    probe = probe_link(bandwidth_bps, download, upload, compute_s, list(workers), payload_bps,
                       duration_s=probe_window_s(max(workers), alone_step_s),
                       tcp_congestion_control=tcp_congestion_control, progress=say, queue=queue, repeats=repeats)
    fit = calibrate_link_to_probe(probe.to_json_dict(), latency_s,
                                  replay_contention=rates_set_contention(queue.delay_s(bandwidth_bps)))
    say(f"  replayed reference step: contention efficiency {fit.contention_efficiency:.3f} ({fit.contention_source}); "
        f"under the other direction's load downloads keep {fit.download_reverse_efficiency:.0%}, uploads "
        f"{fit.upload_reverse_efficiency:.0%}")
    return StepFit(fit.contention_efficiency, fit.download_reverse_efficiency, fit.upload_reverse_efficiency,
                   fit.contention_source, download, upload, compute_s)
