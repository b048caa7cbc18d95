"""``tracetool validate``: profile one worker, predict N workers, measure them, and compare.

Each stage can be reused from an earlier run (``from_profile``, ``from_measured``). The
prediction uses the replay engine's Python API on the profile's step graph with the same link
the measurement had: the PS link shaped to the given bandwidth in both directions, the
workers' own links unshaped (each worker has its own veth), so the replay gets the workers'
bandwidth from the profiled loopback link. Outputs: ``validation.json`` (rows and a summary of
absolute errors), ``validation.png`` and a table; all written atomically.

This module compares; it neither simulates nor measures by itself.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from tracetool.atomic_files import write_json_atomically, write_text_atomically
from tracetool.cluster.cpu_quota import require_cpu_controller
from tracetool.cluster.machine_facts import cpu_model
from tracetool.cluster.topology import format_bandwidth
from tracetool.collect.model_loader import model_label
from tracetool.errors import ToolError
from tracetool.measure.compared import compared_for
from tracetool.measure.link_probe import DEFAULT_TRANSPORT, check_probe_repeats, probe_window_s
from tracetool.measure.measurement import MeasureRequest, load_measured, run_measure
from tracetool.measure.repeats import (
    rates_by_workers,
    twin_runs_disagree,
)
from tracetool.measure.slow_workers import SlowWorker, same_slow_workers, worker_speeds
from tracetool.measure.tensorflow_probe import PROBE_MEASURED_DIR, PROBE_MODEL_FILE
from tracetool.measure.transports import (
    DEFAULT_MODEL_PROBE_TRANSPORT,
    DEFAULT_TWIN_SHAPE,
    TENSORFLOW_TRANSPORT,
    default_probe_repeats,
)
from tracetool.measure.validation_report import compare, format_table, plot_png, summarize
from tracetool.outputs import output_folder, write_marker

if TYPE_CHECKING:
    from tracetool.measure.link_calibration import ReplayedWorkload

VALIDATION_FILE = "validation.json"
PLOT_FILE = "validation.png"
LINK_PROBE_FILE = "link-probe.json"
REQUEST_QUEUE_KEY = "request_queue_s"  # in a link probe: the shaped link's request queue, as validate measured it


@dataclass(frozen=True)
class ValidateRequest:
    measure: MeasureRequest  # model, batch size, worker counts, bandwidth, latency, duration
    out_dir: Path
    traced_steps: int = 5
    from_profile: Path | None = None
    from_measured: Path | None = None
    order: str = ""
    seeds: int = 5
    jobs: int = 1
    contention_efficiency: float = 1.0  # of the shaped link, from benchmarks/network_baseline.py
    # measure the contention efficiency with tracetool.measure.link_probe instead; None: where it can
    # (a shaped link and two or more workers), as validate does by default
    probe_link: bool | None = False
    probe_duration_s: float | None = None  # None: long enough for every probe worker's steps
    # probe runs per worker count, each a point of the fit (see probe_link); None: the transport's default
    probe_repeats: int | None = None
    # transports.MODEL_PROBE_TRANSPORTS: one TCP send each way, gRPC calls, or TensorFlow on the model's tensors
    probe_transport: str = DEFAULT_MODEL_PROBE_TRANSPORT
    from_link_probe: Path | None = None  # reuse an earlier link-probe.json of the same step shape
    # measure the shaped link's standing upload queue and let the replay's requests wait behind it
    # (LinkConfig.request_queue_s), in the probe's calibration as in the prediction. Off by default:
    # left out of the environments it was fitted on, it did not pay (docs/network-probe.md)
    request_queue: bool = False
    # replay the shaped link's token bucket (LinkConfig.burst_bytes), in the probe's fit as in the prediction
    link_burst: bool = True
    # what the link fit replays to meet the probe's rates: the model's step graph (as it will predict), or
    # the probe's chain step (link_calibration.ReplayedWorkload)
    link_fit_workload: Literal["model", "chain"] = "model"
    # the TensorFlow probe's compute (transports.TWIN_SHAPES)
    twin_shape: Literal["chain", "graph"] = DEFAULT_TWIN_SHAPE


def _profile(request: ValidateRequest, say: Any) -> Path:
    if request.from_profile is not None:
        return request.from_profile
    from tracetool.collect.profile import ProfileRequest, run_profile

    m = request.measure
    say(f"profiling {model_label(m.model)} on one PS and one worker")
    return run_profile(ProfileRequest(
        model=m.model, batch_size=m.batch_size, traced_steps=request.traced_steps,
        out_dir=request.out_dir / "profile", optimizer=m.optimizer, warmup_steps=m.warmup_steps,
        intra_op_threads=m.intra_op_threads, inter_op_threads=m.inter_op_threads, model_kwargs=m.model_kwargs,
        command_line=m.command_line,
    ))


def _measured(request: ValidateRequest, say: Any) -> dict[str, Any]:
    if request.from_measured is not None:
        return load_measured(request.from_measured)
    return load_measured(run_measure(request.measure, progress=say))


# The second, pessimistic prediction: connections sharing each direction equally, so workers'
# phases never settle into turns (replay/engine/sharing.py).
BOUND_SHARING = "fair"
BOUND_PREDICTION_FILE = "prediction-fair.json"
# The pipeline and bunching regimes of the default sharing (replay/regimes.py): the range a single
# measured run may fall in where runs split between the two.
REGIMES_PREDICTION_FILE = "prediction-regimes.json"


def measured_link(graph: Any, bandwidth_bps: float | None, latency_s: float, contention_efficiency: float = 1.0,
                  reverse_efficiencies: tuple[float, float] = (1.0, 1.0)) -> Any:
    """The replay's link for the measured topology: the PS link shaped to ``bandwidth_bps``, with
    the link probe's contention and reverse efficiencies (download, upload) where there is one."""
    from dataclasses import replace as replaced

    from replay import profiled_link, target_link

    if bandwidth_bps is None:
        link = target_link(graph, None, latency_s, contention_efficiency=contention_efficiency)
    else:
        # measured workers sit on their own unshaped veth: as fast as the profiled loopback link
        link = target_link(graph, bandwidth_bps, latency_s,
                           worker_bandwidth_bps=max(profiled_link(graph).download_bandwidth_bps, bandwidth_bps),
                           contention_efficiency=contention_efficiency)
    return replaced(link, download_reverse_efficiency=reverse_efficiencies[0],
                    upload_reverse_efficiency=reverse_efficiencies[1])


def probe_reverse_efficiencies(probe: dict[str, Any] | None) -> tuple[float, float]:
    """The (download, upload) reverse efficiencies of a link probe's JSON; probes written before
    they were fitted, and no probe, give none (1.0)."""
    if probe is None:
        return 1.0, 1.0
    return (float(probe.get("download_reverse_efficiency", 1.0)), float(probe.get("upload_reverse_efficiency", 1.0)))


@dataclass(frozen=True)
class ProbeShape:
    """The model's step as the probe runs it: its bytes each way, and the part of a one-worker
    step at the shaped rate that the transfers do not cover, as the probe's compute."""

    download_bytes: int
    upload_bytes: int
    compute_s: float
    window_s: float  # each probe run's window
    download_payload_bps: float


def probe_shape(request: ValidateRequest, graph: Any, latency_s: float) -> ProbeShape:
    """How often connections contend, and what that costs, depends on the step's shape: at
    50mbit the fitted efficiency was 0.98 for 1.2 MB steps without compute and 0.93 for 0.6 to
    0.7 MB steps with 16 to 27 ms of it."""
    from replay import ReplaySettings, predict
    from tracetool.measure.tensorflow_probe import DEFAULT_MIN_WINDOW_S

    m = request.measure
    link = measured_link(graph, m.bandwidth_bps, latency_s)
    one = predict(graph, [1], link, ReplaySettings(seeds=1))
    transfers_s = (8.0 * one.download_bytes_per_step / link.download_payload_bps()
                   + 8.0 * one.upload_bytes_per_step / link.upload_payload_bps())
    compute_s = max(0.0, 1.0 / one.one_worker_steps_per_second - transfers_s)
    window_s = request.probe_duration_s or probe_window_s(max(m.workers), transfers_s + compute_s)
    if request.probe_transport == TENSORFLOW_TRANSPORT:
        # a twin of the model's runs: never a shorter window than theirs (--duration)
        window_s = request.probe_duration_s or max(DEFAULT_MIN_WINDOW_S, m.duration_s, window_s)
    return ProbeShape(one.download_bytes_per_step, one.upload_bytes_per_step, compute_s, window_s,
                      link.download_payload_bps())


def _say_probe(shape: ProbeShape, tensorflow: bool, say: Any, turns: bool = False,
               twin_shape: str = DEFAULT_TWIN_SHAPE) -> None:
    how = "with TensorFlow on the model's tensors" if tensorflow else "without TensorFlow"
    where = "in its graph's shape" if twin_shape == "graph" else "in its stages"
    compute = (f"the model's compute {where} ({shape.compute_s * 1e3:.0f} ms of it uncovered by transfers)"
               if tensorflow else f"{shape.compute_s * 1e3:.0f} ms compute per step")
    say(f"probing the shaped link {how}: {shape.download_bytes:,} B down, {shape.upload_bytes:,} B up, "
        f"{compute}" + (", taking turns with the model's runs" if turns else ""))


def probe_contention_efficiency(request: ValidateRequest, graph: Any, latency_s: float,
                                say: Any) -> dict[str, Any]:
    """Run the link probe with the model's own step shape (``probe_shape``) alone, or reuse an
    earlier one; return its JSON."""
    from tracetool.measure.link_probe import probe_link
    from tracetool.measure.tensorflow_probe import probe_with_tensorflow

    m = request.measure
    shape = probe_shape(request, graph, latency_s)
    if request.from_link_probe is not None:
        return _reused_link_probe(request.from_link_probe, m.bandwidth_bps, shape.download_bytes,
                                  shape.upload_bytes, request.out_dir.resolve())
    _say_probe(shape, request.probe_transport == TENSORFLOW_TRANSPORT, say, twin_shape=request.twin_shape)
    if request.probe_transport == TENSORFLOW_TRANSPORT:
        document = probe_with_tensorflow(m, graph, shape.compute_s, shape.download_bytes, shape.upload_bytes,
                                         shape.window_s, request.probe_repeats, request.out_dir.resolve(), say,
                                         twin_shape=request.twin_shape)
        write_json_atomically(request.out_dir.resolve() / LINK_PROBE_FILE, document)
        return document
    probe = probe_link(m.bandwidth_bps, shape.download_bytes, shape.upload_bytes, shape.compute_s,
                       sorted(set(m.workers)), shape.download_payload_bps, duration_s=shape.window_s,
                       tcp_congestion_control=m.tcp_congestion_control, progress=say, queue=m.queue,
                       repeats=request.probe_repeats, transport=request.probe_transport)
    say(f"  contention efficiency {probe.contention_efficiency:.3f}; under the other direction's load downloads keep "
        f"{probe.download_reverse_efficiency:.0%} of their rate, uploads {probe.upload_reverse_efficiency:.0%}")
    document = probe.to_json_dict()
    write_json_atomically(request.out_dir.resolve() / LINK_PROBE_FILE, document)
    return document


def probe_takes_turns(request: ValidateRequest) -> bool:
    """Whether the model's runs and TensorFlow's probe runs take turns on one link: where both
    are measured here (nothing reused) and the probe is TensorFlow's (``run_measures``)."""
    return (bool(request.probe_link) and request.probe_transport == TENSORFLOW_TRANSPORT
            and request.from_measured is None and request.from_link_probe is None)


def twin_agreement(m: MeasureRequest) -> Any:
    """More runs of both where the model's and its probe's means are further apart than the
    limit (``repeats.twins_disagree``), with the rule for more runs, at two and more workers;
    None where the two need not run alike: synchronous or slowed workers, whose rates the
    asynchronous probe does not share."""
    limit = m.max_standard_error
    if limit is None or m.max_repeats is None or m.sync != "async" or m.slow_workers:
        return None

    def check(runs: list[list[dict[str, Any]]]) -> str | None:
        model, probe = runs
        if any(run.get("workers") == 1 for run in model + probe):
            # a lone row is not the twin's to meet: the model's graph replays its own profile there
            # (the chain's lone compute is fitted to the probe's lone rate, whatever it is)
            return None
        return twin_runs_disagree(model, probe, limit)

    return check


def measure_with_probe(request: ValidateRequest, graph: Any, say: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Measure the model and TensorFlow's probe of its step on one shaped link, run for run in
    turns, so that the drift of a link over the hours of a validation moves both alike; return
    the model's measured.json and the probe's link-probe.json."""
    from tracetool.measure.measurement import run_measures
    from tracetool.measure.tensorflow_probe import link_probe_of_measurement, tensorflow_probe_request

    m = request.measure
    shape = probe_shape(request, graph, (m.latency_s or 0.0) + planned_queue_delay_s(m))
    _say_probe(shape, True, say, turns=True, twin_shape=request.twin_shape)
    out_dir = request.out_dir.resolve()
    probe_request = tensorflow_probe_request(m, graph, shape.compute_s, shape.window_s, request.probe_repeats, out_dir,
                                             twin_shape=request.twin_shape)
    measured_path, probe_path = run_measures([m, probe_request], say, labels=("", "probe"),
                                             agreement=twin_agreement(m))
    probe = link_probe_of_measurement(load_measured(probe_path), shape.download_bytes, shape.upload_bytes,
                                      shape.compute_s, m.tcp_congestion_control)
    write_json_atomically(out_dir / LINK_PROBE_FILE, probe)
    return load_measured(measured_path), probe


def replayed_link_fit(probe: dict[str, Any], latency_s: float, queue_s: float | None, say: Any,
                      request_queue_s: float = 0.0, burst_bytes: float = 0.0,
                      workload: ReplayedWorkload | None = None) -> dict[str, Any]:
    """The contention and reverse efficiencies that make the replay of the model's step graph
    (``workload``, a ``link_calibration.ReplayedWorkload``) meet TensorFlow's probe's rates, or the
    replay of the probe's own chain step (no workload, or a network-only probe, which is no twin
    of the model) meet the probe's (``tracetool.measure.link_calibration``), as JSON; behind a
    shaped queue of ``queue_s`` deeper than the replay's latency holds, the contention efficiency too."""
    from tracetool.measure.link_calibration import calibrate_link_to_probe, rates_set_contention

    # TensorFlow's own probe has only rates, and they are TensorFlow's: they set the contention
    # everywhere, one efficiency per probed count of three or more workers
    tensorflow = probe.get("transport") == TENSORFLOW_TRANSPORT
    fit = calibrate_link_to_probe(probe, latency_s, replay_contention=rates_set_contention(queue_s) or tensorflow,
                                  per_count=tensorflow, request_queue_s=request_queue_s, burst_bytes=burst_bytes,
                                  workload=workload if tensorflow else None)
    replayed = "the model" if fit.replayed_workload == "model" else "the probe"
    say(f"  replayed {replayed}: contention efficiency {fit.contention_efficiency:.3f} ({fit.contention_source}); "
        f"a lone transfer under the other "
        f"direction's load keeps {fit.download_reverse_efficiency:.0%} (download), "
        f"{fit.upload_reverse_efficiency:.0%} (upload) of its rate")
    if 1 in fit.probe_steps_per_second and fit.replayed_workload == "chain":
        say(f"  the probe's replayed workload computes {fit.replayed_compute_s * 1e3:.1f} ms a step, meeting its "
            f"one worker's {fit.probe_steps_per_second[1]:.2f} steps/s")
    if fit.contention_by_workers:
        say("  contention efficiency by worker count: " + ", ".join(
            f"{workers}: {efficiency:.3f}" for workers, efficiency in fit.link_contention()))
    if fit.reverse_by_workers:
        say("  loss-free contention left the replay short of the probe; a lone transfer under reverse load keeps "
            + ", ".join(f"{down:.0%} / {up:.0%} at {workers} workers" for workers, down, up in fit.link_reverse()))
    return fit.to_json_dict()


def _fitted_workload(request: ValidateRequest, graph: Any, latency_s: float, request_queue_s: float,
                     burst_bytes: float, discipline: dict[str, Any]) -> ReplayedWorkload | None:
    """What the link fit replays to meet the probe: the model's step graph, on the prediction's link
    and with its order and shared cores, but run as the probe ran (asynchronous, no slowed
    workers); None for the probe's own chain step (``--link-fit-workload chain``)."""
    if request.link_fit_workload != "model":
        return None
    from replay import ReplaySettings
    from tracetool.measure.link_calibration import ReplayedWorkload

    m = request.measure
    link = replace(measured_link(graph, m.bandwidth_bps, latency_s), request_queue_s=request_queue_s,
                   burst_bytes=burst_bytes)
    as_probed = {k: v for k, v in discipline.items() if k == "shared_cores"}
    return ReplayedWorkload(graph, link, ReplaySettings(jobs=1, **({"order": request.order} if request.order else {}),
                                                        **as_probed))


def _reused_link_probe(path: Path, bandwidth_bps: float, download_bytes: int, upload_bytes: int,
                       out_dir: Path) -> dict[str, Any]:
    """An earlier probe's JSON, if it probed this link with this step's bytes."""
    document = _read_link_probe(path)
    shape = (document["bandwidth_bps"], document["download_bytes"], document["upload_bytes"])
    if shape != (bandwidth_bps, download_bytes, upload_bytes):
        raise ToolError(f"--from-link-probe {path} probed {shape[1]:,} B down and {shape[2]:,} B up at "
                        f"{format_bandwidth(shape[0])}, not this step's {download_bytes:,} B and {upload_bytes:,} B "
                        f"at {format_bandwidth(bandwidth_bps)}")
    write_json_atomically(out_dir / LINK_PROBE_FILE, document)
    return document


def _read_link_probe(path: Path) -> dict[str, Any]:
    """A link-probe.json written by an earlier validation, checked as far as it can be alone."""
    import json

    try:
        document = json.loads(path.read_bytes())
        float(document["bandwidth_bps"]), int(document["download_bytes"]), int(document["upload_bytes"])
        efficiency = float(document["contention_efficiency"])
        reverse = probe_reverse_efficiencies(document)
    except FileNotFoundError:
        raise ToolError(f"--from-link-probe {path} does not exist") from None
    except (OSError, ValueError, KeyError, TypeError):
        raise ToolError(f"--from-link-probe {path} is not a link-probe.json written by validate") from None
    if not 0.1 <= efficiency <= 1.0:
        raise ToolError(f"--from-link-probe {path} holds a contention efficiency of {efficiency:g}, outside [0.1, 1]")
    if not all(0.1 <= r <= 1.0 for r in reverse):
        raise ToolError(f"--from-link-probe {path} holds reverse efficiencies {reverse}, outside [0.1, 1]")
    return document


def predicted_points(graph: Any, profile_dir: Path, workers: list[int], bandwidth_bps: float | None,
                     latency_s: float, order: str, seeds: int, jobs: int, out_dir: Path,
                     contention_efficiency: float = 1.0,
                     discipline: dict[str, Any] | None = None,
                     reverse_efficiencies: tuple[float, float] = (1.0, 1.0),
                     contention_by_workers: tuple[tuple[int, float], ...] = (),
                     request_queue_s: float = 0.0,
                     burst_bytes: float = 0.0,
                     reverse_by_workers: tuple[tuple[int, float, float], ...] = (),
                     ) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]] | None]:
    """Replay the profile's step graph for each worker count, once with the default sharing and
    once with fair sharing, and, where the default sharing has them, in its two regimes
    (``replay.regimes``); keep the graph beside them and return the three predictions' JSON
    (the regimes None where there are none).

    ``discipline`` holds the replay settings of what was measured besides the link: ``sync``,
    ``replicas_to_aggregate`` and the slowed workers' ``worker_speeds``. ``request_queue_s`` is
    the shaped link's deep upload queue (``measured_request_queue_s``), ``burst_bytes`` its
    shaper's bucket (``shaper_burst_bytes``); ``contention_by_workers`` and ``reverse_by_workers``
    the probe's fit per worker count (``link_calibration``)."""
    from replay import ReplaySettings, predict
    from replay.regimes import predict_regimes
    from tracetool.graph.stepgraph import save_stepgraph

    save_stepgraph(graph, out_dir / "graph.json")
    link = replace(measured_link(graph, bandwidth_bps, latency_s, contention_efficiency, reverse_efficiencies),
                   contention_by_workers=contention_by_workers, request_queue_s=request_queue_s,
                   burst_bytes=burst_bytes, reverse_by_workers=reverse_by_workers)
    settings = ReplaySettings(seeds=seeds, jobs=jobs, **({"order": order} if order else {}), **(discipline or {}))
    try:
        prediction = predict(graph, workers, link, settings).to_json_dict()
        bound = predict(graph, workers, link, replace(settings, sharing=BOUND_SHARING)).to_json_dict()
        regime_points = predict_regimes(graph, workers, link, settings)
    except ValueError as exc:
        raise ToolError(f"replay refused the graph of {profile_dir}: {exc}") from None
    write_json_atomically(out_dir / "prediction.json", prediction)
    write_json_atomically(out_dir / BOUND_PREDICTION_FILE, bound)
    regimes = None if regime_points is None else [r.to_json_dict() for r in regime_points]
    if regimes is not None:
        write_json_atomically(out_dir / REGIMES_PREDICTION_FILE, {"points": regimes})
    return prediction, bound, regimes


def measured_discipline(measured: dict[str, Any]) -> dict[str, Any]:
    """The replay settings that make the prediction run what was measured: the discipline, R, and
    the slowed workers at the speed their quota really gave (``measured_slowdown``)."""
    sync = measured.get("sync", "async")
    settings: dict[str, Any] = {}
    if sync != "async":
        settings |= {"sync": sync, "replicas_to_aggregate": measured.get("replicas_to_aggregate")}
    speeds = worker_speeds(measured.get("slow_workers") or [])
    if speeds:
        settings["worker_speeds"] = speeds
    cores = local_cores(measured)
    if cores:
        settings["shared_cores"] = cores
    return settings


def local_cores(measured: dict[str, Any]) -> int:
    """The cores every worker's compute shared in a measurement on this one machine, or 0 where
    each worker had a machine of its own (real hosts) or the count is unknown. A local run's
    workers take turns on the machine's cores (``replay.engine.cores``); the prediction of that
    run must too, or a compute-heavy model's contended rows compare a cluster with a laptop:
    resnet on two cores ran three workers at 5.2-6.0 steps/s where its TensorFlow probe, whose
    compute is sleeps, ran 6.0-7.7. (measure runs async, sync and backup only, none of which
    interrupts steps, so every measured discipline replays on shared cores.)"""
    if str(measured.get("network", "")).startswith("real hosts"):
        return 0
    return int(measured.get("cpu_count") or 0)


def describe_discipline(measured: dict[str, Any]) -> str:
    """``, sync R=2, worker 1 at 1/2.16 speed`` for a title; empty for identical asynchronous workers."""
    parts = []
    sync = measured.get("sync", "async")
    if sync != "async":
        r = measured.get("replicas_to_aggregate")
        parts.append(f"{sync} (R = {r})" if r else f"{sync} (R = {'N' if sync == 'sync' else 'N - 1'})")
    for s in measured.get("slow_workers") or []:
        parts.append(f"worker {s['task_index']} at 1/{s.get('measured_slowdown') or s['factor']:.2f} speed")
    return "".join(f", {p}" for p in parts)


def standing_queue_delay_s(measured: dict[str, Any]) -> float:
    """How long a byte waits in the shaped link's queue when the link is busy.

    Loss-based TCP keeps a busy direction's queue filled, so every transfer's last byte reaches
    the other side about one queue's worth of time after the fluid model says it left; the
    loopback profile never sees this. Without it one worker was predicted 2-15% fast, more for
    models with many transfers per step. The queue is sized to hold ``queue_latency_ms`` of
    traffic (5 ms), with a floor of 32 full frames at low rates; the floor is not what TCP keeps
    queued: with the whole limit as latency (21 ms at 25mbit) one worker came out 4-9% slow at
    25mbit, with the nominal 5 ms every one-worker point on a quiet machine within 3.5% but one.
    The replay takes the nominal time as the link's one-way latency, up to
    ``replay.link_profile.QUEUE_WAIT_CAP_S``: a deep buffer (100 ms) does not delay a lone
    worker's transfers by its depth (one worker was predicted 11-29% slow with it); an unshaped
    run has none.
    """
    from replay.link_profile import queue_wait_s

    queue_s = shaped_queue_s(measured)
    return 0.0 if queue_s is None else queue_wait_s(queue_s)


def link_latency_note(queue_delay_s: float, shaped_s: float | None) -> str:
    """What validate says of the latency the replay takes from the shaped queue, and that a deeper
    buffer was capped (``standing_queue_delay_s``), so a 100 ms buffer's 5 ms reads as meant."""
    if not queue_delay_s:
        return ""
    capped = (f", the cap; the link queues up to {shaped_s * 1e3:.0f} ms"
              if shaped_s is not None and shaped_s > queue_delay_s + 1e-6 else "")
    return f" (link latency: {queue_delay_s * 1e3:.1f} ms of shaped queue{capped})"


def measured_request_queue_s(m: MeasureRequest, say: Any) -> float:
    """``replay.engine.link.LinkConfig.request_queue_s`` of the shaped link, measured: the
    network probe's round trips while another worker uploads (``probe_upload_queue_s``, some
    15 s), less the part the latency holds (as ``LinkProfile.request_queue_s``). Behind a deep buffer
    with CUBIC a worker's next requests wait there behind the other workers' gradients (76-92 ms
    of 100), which the fluid link does not hold; with BBR, or the 5 ms queue at 50mbit and more,
    the queue stands within the latency and nothing changes; a buffer too short to stand
    deeper than ``REQUEST_QUEUE_MIN_STANDING_S`` is not probed. An unshaped run has none."""
    if not m.bandwidth_bps:
        return 0.0
    from replay.link_profile import REQUEST_QUEUE_MIN_STANDING_S, request_queue_s
    from tracetool.measure.network_probe import probe_upload_queue_s

    if 8 * m.queue.limit_bytes(m.bandwidth_bps) / m.bandwidth_bps <= REQUEST_QUEUE_MIN_STANDING_S:
        return 0.0  # no queue of this buffer stands deep enough to count

    standing_s = probe_upload_queue_s(m.bandwidth_bps, m.queue, m.tcp_congestion_control,
                                      progress=lambda text: say(f"  {text.strip()}"))
    waits_s = request_queue_s(standing_s)
    say(f"  standing upload queue {standing_s * 1e3:.1f} ms: requests wait up to {waits_s * 1e3:.1f} ms "
        "behind other workers' gradients")
    return waits_s


def planned_queue_delay_s(m: MeasureRequest) -> float:
    """``standing_queue_delay_s`` of the link ``m`` will shape, before it is measured."""
    from replay.link_profile import queue_wait_s

    return queue_wait_s(m.queue.delay_s(m.bandwidth_bps)) if m.bandwidth_bps else 0.0


def shaper_burst_bytes(measured: dict[str, Any]) -> float:
    """The bucket of the measured link's shaper (``LinkConfig.burst_bytes``); 0 where nothing was
    shaped. A lone worker's link idles each way every step, and the bucket passes its depth at
    once when the next transfer starts: at 25mbit widedeep's 442 kB each way step 10 ms sooner
    with 16 KB than the line rate alone allows, a third of its 3.4% gap to the replay."""
    shaping = measured.get("shaping") or {}
    if not measured.get("bandwidth_bps") or shaping.get("qdisc") != "tbf":
        return 0.0
    return float(shaping.get("burst_bytes") or 0.0)


def shaped_queue_s(measured: dict[str, Any]) -> float | None:
    """The shaped link's queue in seconds of traffic at its rate, as measured; None where the
    measurement shaped nothing (or was written before it recorded the queue)."""
    queue_ms = (measured.get("shaping") or {}).get("queue_latency_ms")
    return float(queue_ms) / 1e3 if queue_ms and measured.get("bandwidth_bps") else None


def run_validate(request: ValidateRequest, progress: Any = None) -> Path:
    """Profile (or reuse), predict, measure (or reuse) and compare; return the path of validation.json."""
    say = progress or (lambda text: print(text, file=sys.stderr, flush=True))
    m = request.measure
    measured_file = None
    if request.from_measured is not None:
        measured_file = load_measured(request.from_measured)
        if measured_file["model"] != m.model or measured_file["batch_size"] != m.batch_size:
            raise ToolError(f"{request.from_measured} measured {measured_file['model']} at batch "
                            f"{measured_file['batch_size']}, not {m.model} at batch {m.batch_size}")
        bandwidth = m.bandwidth_bps or measured_file.get("bandwidth_bps")
        if m.bandwidth_bps and measured_file.get("bandwidth_bps") != m.bandwidth_bps:
            raise ToolError(f"{request.from_measured} was measured at bandwidth {measured_file.get('bandwidth_bps')} "
                            f"bit/s, not {m.bandwidth_bps:g}")
        workers = m.workers or tuple(p["workers"] for p in measured_file["points"])
        m = _measured_discipline(replace(m, bandwidth_bps=bandwidth, workers=workers), measured_file,
                                 request.from_measured)
    m.check()
    if m.slow_workers and request.from_measured is None:
        require_cpu_controller()  # before the profile, not after it
    request = replace(request, measure=m)
    if request.probe_repeats is None:
        request = replace(request, probe_repeats=default_probe_repeats(request.probe_transport))
    if request.probe_link is None:
        request = replace(request, probe_link=default_probe(m))
    if request.seeds < 1:
        raise ToolError(f"--seeds must be at least 1, got {request.seeds}")
    if not 0.1 <= request.contention_efficiency <= 1.0:
        raise ToolError(f"--contention-efficiency must be in [0.1, 1], got {request.contention_efficiency:g}")
    if request.from_link_probe is not None and not request.probe_link:
        raise ToolError("--from-link-probe goes with --contention-efficiency probe")
    if request.probe_link and not m.bandwidth_bps:
        raise ToolError("--contention-efficiency probe needs --bandwidth: an unshaped link has nothing to probe")
    if request.probe_link and request.probe_duration_s is not None and not 0 < request.probe_duration_s <= 3600:
        raise ToolError(f"--probe-duration must be positive and at most 3600 s, got {request.probe_duration_s:g}")
    if request.probe_link:
        check_probe_repeats(request.probe_repeats)
    if request.probe_link and max(m.workers) < 2:
        raise ToolError("--contention-efficiency probe needs a worker count of 2 or more, where connections contend")
    saved_graph = _check_reused_inputs(request)
    _check_prediction_settings(request)
    mismatch = machine_mismatch(_profile_cpu(request, saved_graph),
                                measured_file.get("cpu_model") if measured_file else cpu_model())
    if mismatch:
        say(f"warning: {mismatch}")
    out_dir = Path(os.path.abspath(request.out_dir))
    with output_folder(out_dir, "tracetool validate") as staging:
        _keep_reused_inputs(request, out_dir, staging)
        staged = replace(request, out_dir=staging, measure=replace(m, out_dir=staging / "measured"))
        try:
            title, rows, summary = _validate_into(staged, measured_file, out_dir, say, saved_graph)
        except BaseException as exc:
            kept = keep_finished_measurement(staging, out_dir) if request.from_measured is None else None
            if kept is None:
                raise
            profile = request.from_profile or kept / "profile"
            resume = (f"the finished measurement is kept in {kept}: rerun with --from-profile {profile} "
                      f"--from-measured {kept / 'measured' / 'measured.json'}"
                      + (f" --from-link-probe {kept / LINK_PROBE_FILE}" if (kept / LINK_PROBE_FILE).is_file() else ""))
            if isinstance(exc, KeyboardInterrupt):
                say(resume)
                raise
            reason = str(exc) if isinstance(exc, ToolError) else f"{type(exc).__name__}: {exc}"
            raise ToolError(f"{reason}; {resume}") from exc
    print(format_table(title, rows, summary, compared_for(m.sync).label))
    return out_dir / VALIDATION_FILE


def default_probe(m: MeasureRequest) -> bool:
    """Whether validate probes the link by default: where workers contend on a shaped link. With
    the probe and two repeats the README's table has median 2.0%; without, two and three workers
    of an unseen model at 100mbit came out +6.6% and +11.3%."""
    return bool(m.bandwidth_bps) and max(m.workers, default=1) >= 2


def keep_finished_measurement(staging: Path, target: Path) -> Path | None:
    """Move a finished measurement (and the profile) out of a failing validation's staging folder.

    A validation measures for minutes to hours before it probes and predicts; a failure after
    that (a probe that cannot reach the PS, a prediction refused) must not throw the measurement
    away with the staging folder. It goes to ``<OUT>.kept`` (``.kept-2``, ... if taken), a folder
    this tool marks as its own. None when no measurement had finished."""
    if not (staging / "measured" / "measured.json").is_file():
        return None
    kept = target.with_name(f"{target.name}.kept")
    number = 2
    while kept.exists() or kept.is_symlink():
        kept = target.with_name(f"{target.name}.kept-{number}")
        number += 1
    kept.mkdir(parents=True)
    # the probe's runs took turns with the measurement's: they are as finished, and as costly
    for part in ("profile", "measured", PROBE_MEASURED_DIR, PROBE_MODEL_FILE, LINK_PROBE_FILE):
        if (staging / part).exists():
            shutil.move(str(staging / part), str(kept / part))
    write_marker(kept, "tracetool validate (kept after a failure)")
    return kept


def _measured_discipline(m: MeasureRequest, measured: dict[str, Any], path: Path) -> MeasureRequest:
    """The reused measurement's discipline and slowed workers; those given must match it.

    As with the bandwidth, what is not given is taken from the file (``async`` and no slowed
    workers count as not given), so ``--from-measured`` alone re-predicts what was measured."""
    sync = measured.get("sync", "async")
    r = measured.get("replicas_to_aggregate")
    if m.sync not in ("async", sync) or (m.replicas_to_aggregate is not None and m.replicas_to_aggregate != r):
        raise ToolError(f"{path} was measured with --sync {sync}" + (f" --replicas-to-aggregate {r}" if r else "")
                        + f", not --sync {m.sync}" + (f" --replicas-to-aggregate {m.replicas_to_aggregate}"
                                                     if m.replicas_to_aggregate else ""))
    slowed = measured.get("slow_workers") or []
    if m.slow_workers and not same_slow_workers(slowed, m.slow_workers):
        had = " ".join(f"{s['task_index']}:{s['factor']:g}" for s in slowed) or "none"
        raise ToolError(f"{path} was measured with slowed workers {had}, not the --slow-worker given")
    return replace(m, sync=sync, replicas_to_aggregate=r,
                   slow_workers=tuple(SlowWorker(int(s["task_index"]), float(s["factor"])) for s in slowed))


def machine_mismatch(profile_cpu: str | None, measuring_cpu: str | None) -> str | None:
    """Why a profile made on one CPU cannot be checked against runs on another, or None.

    The replay's compute is the profile's op times (scaled to its own untraced step): on another
    CPU a model computes at another speed (resnet's step took twice the CPU time on an AMD EPYC
    as on the Intel Xeon it was profiled on), so the rows would measure the two CPUs, not the
    prediction. Unknown on either side (graphs from before the CPU was recorded): None."""
    if not profile_cpu or not measuring_cpu or profile_cpu == measuring_cpu:
        return None
    return (f"the profile was made on {profile_cpu}, the runs are on {measuring_cpu}: op times do not carry "
            "over between CPUs, so the rows compare the two machines too; profile where you measure "
            "(drop --from-profile)")


def _profile_cpu(request: ValidateRequest, saved_graph: Any) -> str | None:
    """The CPU a reused profile ran on, where it says (a step graph's model, a profile's meta.json)."""
    if saved_graph is not None:
        return saved_graph.model.get("cpu_model")
    if request.from_profile is not None and (request.from_profile / "meta.json").is_file():
        try:
            return json.loads((request.from_profile / "meta.json").read_text()).get("cpu_model")
        except (OSError, ValueError, AttributeError):
            return None  # the profile's own reader says what is wrong with it
    return None


def _check_reused_inputs(request: ValidateRequest) -> Any:
    """Reused inputs exist, so a typo is found before a profile or a measurement runs; return the
    step graph where ``--from-profile`` names one (read once: it is what the prediction uses)."""
    graph = None
    if request.from_profile is not None:
        if request.from_profile.is_file():
            from tracetool.graph.stepgraph import load_stepgraph

            graph = load_stepgraph(request.from_profile)  # one line where it is not a step graph
        elif not (request.from_profile / "meta.json").is_file():
            raise ToolError(f"--from-profile {request.from_profile} holds no meta.json; give a profile folder or "
                            "the step graph (graph.json) an earlier validate wrote")
    if request.from_link_probe is not None:
        _read_link_probe(request.from_link_probe)
    return graph


def _check_prediction_settings(request: ValidateRequest) -> None:
    """The replay's settings are checked before anything runs, not after the measurement."""
    from replay.engine.order import order_policy

    if request.order:
        try:
            order_policy(request.order)
        except ValueError as exc:
            raise ToolError(f"--order: {exc}") from None
    if request.jobs < 1:
        raise ToolError(f"replay jobs must be at least 1, got {request.jobs}")


def _keep_reused_inputs(request: ValidateRequest, out_dir: Path, staging: Path) -> None:
    """Copy reused inputs that live inside the folder being replaced into the new one.

    ``--from-profile V/profile --out V`` is the natural way to re-predict a validation; the old
    ``V`` is replaced at the end, so what it lends the new run must move along with it."""
    for reused in (request.from_profile, request.from_measured, request.from_link_probe):
        if reused is None:
            continue
        try:
            top = Path(os.path.abspath(reused)).relative_to(out_dir).parts[0]
        except (ValueError, IndexError):
            continue
        source, copy = out_dir / top, staging / top
        if copy.exists():
            continue
        if source.is_dir():
            shutil.copytree(source, copy, symlinks=True)
        else:
            shutil.copy2(source, copy)


def _relocated(path: Path, old_root: Path, new_root: Path) -> Path:
    """``path`` under ``new_root`` if it lies under ``old_root``, else ``path`` itself.

    Maps between the staging folder and the final one: reused inputs inside the final folder
    are read from their copies in staging, and paths recorded in the results name the final
    folder."""
    try:
        return new_root / Path(os.path.abspath(path)).relative_to(old_root)
    except ValueError:
        return path


def _validate_into(request: ValidateRequest, measured_file: dict[str, Any] | None, final_dir: Path,
                   say: Any, saved_graph: Any = None) -> tuple[str, list[dict[str, Any]], dict[str, Any]]:
    """Profile, measure, probe and predict with every output in ``request.out_dir`` (the staging
    folder); return the table's title, rows and summary."""
    m = request.measure
    out_dir = request.out_dir
    if request.from_profile is not None:
        request = replace(request, from_profile=_relocated(request.from_profile, final_dir, out_dir))
    profile_dir = _profile(request, say)
    from tracetool.graph.builder import build_stepgraph_from_path
    from tracetool.graph.stepgraph import load_stepgraph

    # a step graph that validate saved beside its prediction re-predicts without the profile's traces
    if saved_graph is not None:
        graph = saved_graph
    else:
        graph = load_stepgraph(profile_dir) if profile_dir.is_file() else build_stepgraph_from_path(profile_dir)
    probe: dict[str, Any] | None = None
    if measured_file is not None:
        measured = measured_file
    elif probe_takes_turns(request):
        measured, probe = measure_with_probe(request, graph, say)
    else:
        measured = _measured(request, say)
    queue_delay_s = standing_queue_delay_s(measured)
    latency_s = (m.latency_s or 0.0) + queue_delay_s
    if request.probe_link and probe is None:
        probe = probe_contention_efficiency(request, graph, latency_s, say)
    request_queue_s = 0.0
    if request.request_queue:
        # a link probe measured with the wait keeps the queue it measured, and a reuse of it measures nothing
        known = probe.get(REQUEST_QUEUE_KEY) if probe is not None else None
        request_queue_s = float(known) if known is not None else measured_request_queue_s(m, say)
        if probe is not None and known is None:
            probe = {**probe, REQUEST_QUEUE_KEY: request_queue_s}
            write_json_atomically(out_dir / LINK_PROBE_FILE, probe)
    burst_bytes = shaper_burst_bytes(measured) if request.link_burst else 0.0
    reverse = (1.0, 1.0)
    by_workers: tuple[tuple[int, float], ...] = ()
    reverse_by_workers: tuple[tuple[int, float, float], ...] = ()
    link_fit = None
    discipline = measured_discipline(measured)
    if probe is not None:
        link_fit = replayed_link_fit(probe, latency_s, shaped_queue_s(measured), say, request_queue_s, burst_bytes,
                                     _fitted_workload(request, graph, latency_s, request_queue_s, burst_bytes,
                                                      discipline))
        request = replace(request, contention_efficiency=link_fit["contention_efficiency"])
        reverse = (link_fit["download_reverse_efficiency"], link_fit["upload_reverse_efficiency"])
        by_workers = tuple(sorted((int(n), e) for n, e in link_fit.get("contention_by_workers", {}).items()))
        reverse_by_workers = tuple(sorted((int(n), float(d), float(u))
                                          for n, (d, u) in link_fit.get("reverse_by_workers", {}).items()))
    say("predicting with the replay engine" + link_latency_note(queue_delay_s, shaped_queue_s(measured))
        + (f"; the workers' compute shares the runs' {discipline['shared_cores']} cores"
           if discipline.get("shared_cores") else "")
        + (f"; the shaper's {burst_bytes / 1024:.0f} KiB bucket passes at once after idle" if burst_bytes else ""))
    prediction, bound, regimes = predicted_points(graph, profile_dir, list(m.workers), m.bandwidth_bps, latency_s,
                                                  request.order, request.seeds, request.jobs, out_dir,
                                                  request.contention_efficiency, discipline, reverse, by_workers,
                                                  request_queue_s, burst_bytes, reverse_by_workers)
    compared = compared_for(m.sync)
    rows = compare(prediction["points"], measured["points"], bound["points"], compared, regimes,
                   # the fit aims at the probe runs' mean: their spread is the prediction's share
                   rates_by_workers(probe["points"]) if probe is not None else None)
    if not rows:
        raise ToolError("the prediction and the measurement share no worker count")
    summary = summarize(rows)
    link = format_bandwidth(m.bandwidth_bps) if m.bandwidth_bps else "unshaped loopback"
    title = f"{model_label(m.model)}, batch {m.batch_size}, PS link {link}{describe_discipline(measured)}"
    document = {
        "schema": "tfsim.validation",
        "schema_version": 1,
        "model": m.model,
        "batch_size": m.batch_size,
        "bandwidth_bps": m.bandwidth_bps,
        "latency_s": m.latency_s,
        "queue_delay_s": queue_delay_s,
        "request_queue_s": request_queue_s,
        "burst_bytes": burst_bytes,
        "sync": m.sync,
        "replicas_to_aggregate": m.replicas_to_aggregate,
        "slow_workers": measured.get("slow_workers") or [],
        # what predicted and measured are in rows[]: worker steps (async) or PS updates (sync, backup)
        "compared": compared.key,
        "profile": str(_relocated(profile_dir, out_dir, final_dir)),
        "prediction_settings": prediction["settings"],
        "prediction_link": prediction["link"],
        "prediction_fair_settings": bound["settings"],
        "calibration": prediction["calibration"],
        "link_bound_steps_per_second": prediction["link_bound_steps_per_second"],
        "measured_cpu_saturated": measured.get("cpu_saturated", False),
        "contention_efficiency": request.contention_efficiency,
        "contention_efficiency_source": "link probe" if probe is not None else "given",
        "reverse_efficiencies": {"download": reverse[0], "upload": reverse[1]},
        "link_fit": link_fit,
        "link_probe": None if probe is None else {
            k: probe.get(k) for k in ("download_bytes", "upload_bytes", "compute_s", "alone_share", "contended_share")
        } | dict(zip(("download_reverse_efficiency", "upload_reverse_efficiency"), probe_reverse_efficiencies(probe),
                     strict=True)) | {"transport": probe.get("transport", DEFAULT_TRANSPORT),
                                      "points": [{"workers": p["workers"], "steps_per_second": p["steps_per_second"],
                                                  "down_busy": p.get("down_busy"), "up_busy": p.get("up_busy")}
                                                 for p in probe["points"]]},
        "rows": rows,
        "summary": summary,
    }
    write_json_atomically(out_dir / VALIDATION_FILE, document)
    write_text_atomically(out_dir / PLOT_FILE, plot_png(title, rows, compared.label))
    return title, rows, summary
