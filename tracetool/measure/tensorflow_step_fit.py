"""A link profile's reference step run by TensorFlow itself (``tracetool probe --transport tensorflow``).

Why: validate's probe of a model's own tensors, run by TensorFlow, was the twin of TensorFlow's
workers where raw TCP and gRPC calls from Python were not (behind a 100 ms buffer with CUBIC the
network-only probes ran two workers 10 to 23% below TensorFlow; docs/network-probe.md,
"TensorFlow as the probe"). A link profile is made before any model is chosen, so it cannot
probe the model's tensors; it probes the reference step of ``link_step_fit`` instead: the same
bytes each way and compute between, carried as PS variables (``probe_model``) split into as many
tensors as the gRPC probe sends. As in validate, TensorFlow's rates alone set the contention,
one efficiency per worker count of three or more, since TensorFlow's three workers may lose
less than its four (``link_calibration.calibrate_link_to_probe``).

The measurement runs in a temporary folder that is removed afterwards; the profile keeps every
run's rate (``StepFit.runs``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from replay.link_profile import StepFit
from tracetool.atomic_files import write_text_atomically
from tracetool.cluster.topology import QueueSize
from tracetool.measure.grpc_probe_code import split_bytes
from tracetool.measure.link_calibration import calibrate_link_to_probe
from tracetool.measure.link_step_fit import STEP_FIT_WORKERS, reference_step
from tracetool.measure.measurement import MeasureRequest, load_measured, run_measure
from tracetool.measure.tensorflow_probe import (
    PROBE_MEASURED_DIR,
    PROBE_MODEL_FILE,
    link_probe_of_measurement,
    probe_model_source,
)
from tracetool.measure.windows import VALIDATE_SETTLE_S, VALIDATE_WINDOW_S

# validate's settled windows: the reference step is validate's probe of a step that is no model's,
# and behind a deep buffer its 20-second windows opening 2 s after warm-up ran two workers at 1.73
# times one where the same shape (resnet's at 25mbit) settles at 1.88 (docs/network-probe.md)
DEFAULT_TENSORFLOW_STEP_WINDOW_S = VALIDATE_WINDOW_S
TENSORFLOW_STEP_SETTLE_S = VALIDATE_SETTLE_S


def tensorflow_reference_step_fits(bandwidth_bps: float, latency_s: float, queue: QueueSize,
                                   tcp_congestion_control: str, transfers_s: tuple[float, ...],
                                   progress: Callable[[str], None] | None = None,
                                   workers: tuple[int, ...] = STEP_FIT_WORKERS, repeats: int = 1,
                                   min_window_s: float = DEFAULT_TENSORFLOW_STEP_WINDOW_S,
                                   settle_s: float = TENSORFLOW_STEP_SETTLE_S) -> tuple[StepFit, ...]:
    """Every reference step's fit from TensorFlow's probe of it, shortest transfers first."""
    with tempfile.TemporaryDirectory(prefix="tfsim-reference-step-") as work:
        return tuple(tensorflow_reference_step_fit(bandwidth_bps, latency_s, queue, tcp_congestion_control,
                                                   transfer_s, Path(work) / f"step-{index}", progress, workers,
                                                   repeats, min_window_s, settle_s)
                     for index, transfer_s in enumerate(sorted(transfers_s)))


def tensorflow_reference_step_fit(bandwidth_bps: float, latency_s: float, queue: QueueSize,
                                  tcp_congestion_control: str, transfer_s: float, work_dir: Path,
                                  progress: Callable[[str], None] | None = None,
                                  workers: tuple[int, ...] = STEP_FIT_WORKERS, repeats: int = 1,
                                  min_window_s: float = DEFAULT_TENSORFLOW_STEP_WINDOW_S,
                                  settle_s: float = TENSORFLOW_STEP_SETTLE_S) -> StepFit:
    """Run the reference step of ``transfer_s`` each way as a TensorFlow cluster of each worker
    count on the shaped link (``repeats`` clusters per count, each window opening ``settle_s``
    after the last worker is warm), then fit the replay's efficiencies to its rates. ``work_dir``
    (not yet existing) holds the model file and the measurement."""
    from tracetool.measure.link_probe import probe_window_s

    say = progress or (lambda text: None)
    download, upload, compute_s = reference_step(bandwidth_bps, transfer_s)
    tensors = split_bytes(download)
    window_s = probe_window_s(max(workers), 2 * transfer_s + compute_s, floor_s=min_window_s)
    say(f"  reference step run by TensorFlow: {len(tensors)} tensors, {download:,} B each way, "
        f"{compute_s * 1e3:.0f} ms compute, {', '.join(map(str, workers))} worker(s), {window_s:.0f} s windows "
        f"after {settle_s:g} s of settling")
    work_dir.mkdir(parents=True)
    model_file = work_dir / PROBE_MODEL_FILE
    write_text_atomically(model_file, probe_model_source(f"the {transfer_s:g} s reference", tensors, compute_s,
                                                         writer="tracetool probe"))
    request = MeasureRequest(model=str(model_file), batch_size=1, workers=tuple(workers),
                             out_dir=work_dir / PROBE_MEASURED_DIR, bandwidth_bps=bandwidth_bps,
                             duration_s=window_s, settle_s=settle_s, repeats=repeats,
                             tcp_congestion_control=tcp_congestion_control,
                             queue=queue)
    measured = load_measured(run_measure(request, progress=lambda text: say(f"    {text}")))
    probe = link_probe_of_measurement(measured, download, upload, compute_s, tcp_congestion_control)
    fit = calibrate_link_to_probe(probe, latency_s, replay_contention=True, per_count=True)
    per_count = ", ".join([f"{n} workers {e:.3f}" for n, e in fit.link_contention()]
                          + [f"{n} workers' reverse {d:.0%} / {u:.0%}" for n, d, u in fit.link_reverse()])
    say(f"  replayed reference step: contention efficiency {fit.contention_efficiency:.3f} ({fit.contention_source})"
        f"{'; ' + per_count if per_count else ''}; under the other direction's load downloads keep "
        f"{fit.download_reverse_efficiency:.0%}, uploads {fit.upload_reverse_efficiency:.0%}")
    return StepFit(fit.contention_efficiency, fit.download_reverse_efficiency, fit.upload_reverse_efficiency,
                   fit.contention_source, download, upload, compute_s, transfer_s,
                   tuple((int(p["workers"]), float(p["steps_per_second"])) for p in probe["points"]),
                   fit.link_contention(), fit.link_reverse())
