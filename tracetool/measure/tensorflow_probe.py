"""validate's model-shaped link probe run by TensorFlow itself: the model's tensors, no model.

Why: the replay's link efficiencies are fitted to a probe of the model's step shape, so the
prediction is only as good as the probe is a twin of TensorFlow's workers. Raw TCP (one send
each way) and gRPC calls from Python are twins at one worker, but behind a deep buffer with
CUBIC their two workers ran 10 to 23% below TensorFlow's (alexnet at 25mbit behind 100 ms: 1.01
steps/s, TensorFlow 1.18): how connections restart after idle, how the PS pulls the gradients
over a connection of its own, how HTTP/2 windows pace many tensors, all differ. TensorFlow moving
the model's own tensors has none of those differences. At that point it ran 1.20, and 1.13 and
1.11 at three and four workers (TensorFlow 1.22 and 1.08; raw TCP 0.89 and 0.98).

The probe is a model file (``probe_model``) with one variable per tensor the step downloads, at
its size, and the model's compute as sleeps in the model's schedule (``probe_schedule``: each
stage waits for the tensors the model's compute reads there, each gradient leaves when the
model's backward pass produced it); ``tracetool measure`` runs it on the same shaped link as the
measurement, and its rates become a link-probe.json whose workers' rates the replay is fitted to
(``link_calibration``). It needs the model's compute on no core: four probe workers used 0.16 of
this machine's two cores.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tracetool.atomic_files import write_text_atomically
from tracetool.measure.measurement import MeasureRequest, load_measured, run_measure
from tracetool.measure.probe_graph_schedule import GraphSchedule, graph_schedule, widest_level
from tracetool.measure.probe_schedule import ProbeSchedule, probe_schedule
from tracetool.measure.transports import DEFAULT_TWIN_SHAPE, TENSORFLOW_TRANSPORT

PROBE_MODEL_FILE = "probe_model.py"
PROBE_MEASURED_DIR = "probe-measured"
DEFAULT_MIN_WINDOW_S = 20.0  # without --probe-duration; the campaign's TensorFlow measurements took 20 s windows


def probe_model_source(model: str, tensor_bytes: list[int], compute_s: float,
                       writer: str = "tracetool validate") -> str:
    """A model file ``tracetool measure --model`` runs: ``model``'s tensors and compute wait, nothing else."""
    return (f'"""TensorFlow link probe of the step of {model}: {len(tensor_bytes)} tensors, '
            f'{sum(tensor_bytes):,} B each way,\n{compute_s * 1e3:.1f} ms of compute. Written by {writer}; '
            'run it again with\n'
            '``tracetool measure --model THIS_FILE ...``."""\n\n'
            "from tracetool.measure.probe_model import build_probe_loss\n\n"
            f"TENSOR_BYTES = [\n{_rows(tensor_bytes)}]\n"
            f"COMPUTE_S = {compute_s!r}\n\n\n"
            "def build(batch_size: int):\n"
            "    return build_probe_loss(TENSOR_BYTES, COMPUTE_S)\n")


def twin_probe_model_source(model: str, schedule: ProbeSchedule, compute_s: float,
                            writer: str = "tracetool validate") -> str:
    """A model file ``tracetool measure --model`` runs: ``model``'s tensors and its compute's
    schedule (``probe_schedule``), nothing else. ``compute_s`` (the compute the transfers do not
    cover) is what the replay of the probe's workload takes for it."""
    return (f'"""TensorFlow link probe of the step of {model}: {len(schedule.tensor_bytes)} tensors, '
            f'{sum(schedule.tensor_bytes):,} B each way,\n'
            f'{schedule.compute_s * 1e3:.1f} ms of compute in {len(schedule.stage_compute_s)} stages as the model '
            f'computes them. Written by {writer};\n'
            'run it again with ``tracetool measure --model THIS_FILE ...``."""\n\n'
            "from tracetool.measure.probe_model import build_twin_probe_loss\n\n"
            f"TENSOR_BYTES = [\n{_rows(list(schedule.tensor_bytes))}]\n"
            "# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves\n"
            f"GATE_STAGE = [\n{_rows(list(schedule.gate_stage))}]\n"
            f"RELEASE_AFTER = [\n{_rows(list(schedule.release_after))}]\n"
            f"STAGE_COMPUTE_S = [\n{_rows([round(s, 6) for s in schedule.stage_compute_s], per_row=6)}]\n"
            f"BEFORE_S = {round(schedule.before_s, 6)!r}\n"
            f"COMPUTE_S = {compute_s!r}\n\n\n"
            "def build(batch_size: int):\n"
            "    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)\n")


def graph_twin_probe_model_source(model: str, schedule: GraphSchedule, compute_s: float,
                                  writer: str = "tracetool validate", compute_threads: int = 1) -> str:
    """A model file ``tracetool measure --model`` runs: ``model``'s tensors and its compute in the
    step graph's shape (``probe_graph_schedule``) on ``compute_threads`` threads, nothing else."""
    return (f'"""TensorFlow link probe of the step of {model}: {len(schedule.tensor_bytes)} tensors, '
            f'{sum(schedule.tensor_bytes):,} B each way,\n'
            f'{schedule.compute_s * 1e3:.1f} ms of compute in {len(schedule.group_compute_s)} groups of the model\'s '
            f'ops, in its graph\'s shape. Written by {writer};\n'
            'run it again with ``tracetool measure --model THIS_FILE ...``."""\n\n'
            "from tracetool.measure.probe_model import build_graph_twin_probe_loss\n\n"
            f"TENSOR_BYTES = [\n{_rows(list(schedule.tensor_bytes))}]\n"
            "# per tensor: the groups that wait for it; per group: the groups it waits for, and its compute\n"
            f"GATES = [\n{_rows([list(g) for g in schedule.gates], per_row=8)}]\n"
            f"GROUP_INPUTS = [\n{_rows([list(g) for g in schedule.group_inputs], per_row=8)}]\n"
            f"GROUP_COMPUTE_S = [\n{_rows([round(c, 6) for c in schedule.group_compute_s], per_row=6)}]\n"
            "# per tensor: the group after which its gradient leaves (-1: after every group)\n"
            f"RELEASE_GROUP = [\n{_rows(list(schedule.release_group))}]\n"
            f"COMPUTE_S = {compute_s!r}\n"
            "# the model's inter-op threads: at most this many groups wait at once\n"
            f"COMPUTE_THREADS = {compute_threads!r}\n"
            + _pulls_source(schedule) + "\n\n"
            "def build(batch_size: int):\n"
            "    return build_graph_twin_probe_loss(TENSOR_BYTES, GATES, GROUP_INPUTS, GROUP_COMPUTE_S,\n"
            "                                       RELEASE_GROUP, COMPUTE_THREADS"
            + (",\n                                       PULL_BYTES, PULL_GROUP, PULLED_BY)\n"
               if schedule.pull_bytes else ")\n"))


def _pulls_source(schedule: GraphSchedule) -> str:
    """The lines naming what the PS takes from the worker before it sends a tensor; none for a
    step whose downloads wait for no upload, as most do."""
    if not schedule.pull_bytes:
        return ""
    return ("# per worker tensor the PS takes before it sends some: its size and the group after which\n"
            "# it is made (-1: at the step's start); per tensor: the worker tensors it waits for\n"
            f"PULL_BYTES = [\n{_rows(list(schedule.pull_bytes))}]\n"
            f"PULL_GROUP = [\n{_rows(list(schedule.pull_group))}]\n"
            f"PULLED_BY = [\n{_rows([list(p) for p in schedule.pulled_by], per_row=8)}]\n")


def _rows(values: list[Any], per_row: int = 10) -> str:
    """The list's items, ``per_row`` to an indented line, so the file reads (and lints) as code."""
    return "".join("    " + " ".join(f"{value}," for value in values[start:start + per_row]) + "\n"
                   for start in range(0, len(values), per_row))


def more_runs_like(measure: MeasureRequest, repeats: int) -> dict[str, Any]:
    """The probe runs more clusters of a count where the measurement would: its regimes split
    TensorFlow's runs as they split the model's (behind a 100 ms buffer with CUBIC, widedeep at
    10mbit with three workers: 2.19 and 1.60 steps/s)."""
    if measure.max_standard_error is None or measure.max_repeats is None:
        return {}
    return {"max_standard_error": measure.max_standard_error, "max_repeats": max(measure.max_repeats, repeats)}


def untraced_compute_scale(graph: Any) -> float:
    """The scale of the graph's op durations that gives one worker the untraced step time, as
    the replay of the model uses it (``replay.calibrate_compute_scale``)."""
    from replay.sweep import ReplaySettings, prepare

    return prepare(graph, None, ReplaySettings())[4].compute_scale


def tensorflow_probe_request(measure: MeasureRequest, graph: Any, compute_s: float, duration_s: float,
                             repeats: int, out_dir: Path, twin_shape: str = DEFAULT_TWIN_SHAPE) -> MeasureRequest:
    """The measurement of the probe on ``measure``'s shaped link (its worker counts, bandwidth,
    queue and congestion control), its model file written into ``out_dir`` and its runs going to
    ``out_dir / PROBE_MEASURED_DIR``; ``measurement.run_measures`` can take turns with the model's.
    It runs one worker too, measured or not: the calibration sets the replayed probe's compute by
    that rate (``link_calibration.lone_compute_s``), so that the contended rates speak of the
    link and not of how the twin's stages run in TensorFlow. ``twin_shape`` "graph" (the default)
    writes the twin in the step graph's shape (``probe_graph_schedule``), "chain" a chain of stages."""
    model_file = out_dir / PROBE_MODEL_FILE
    scale = untraced_compute_scale(graph)
    threads = {}
    if twin_shape == "graph":
        schedule = graph_schedule(graph, scale)
        source = graph_twin_probe_model_source(measure.model, schedule, compute_s,
                                               compute_threads=measure.inter_op_threads)
        threads = {"inter_op_threads": graph_twin_inter_op_threads(schedule, measure.inter_op_threads)}
    elif twin_shape == "chain":
        source = twin_probe_model_source(measure.model, probe_schedule(graph, scale), compute_s)
    else:
        raise ValueError(f"twin_shape must be chain or graph, got {twin_shape!r}")
    write_text_atomically(model_file, source)
    workers = tuple(sorted(set(measure.workers) | {1}))
    return MeasureRequest(model=str(model_file), batch_size=1, workers=workers,
                          out_dir=out_dir / PROBE_MEASURED_DIR, bandwidth_bps=measure.bandwidth_bps,
                          duration_s=duration_s, settle_s=measure.settle_s, repeats=repeats,
                          tcp_congestion_control=measure.tcp_congestion_control, queue=measure.queue,
                          **threads, **more_runs_like(measure, repeats))


def graph_twin_inter_op_threads(schedule: GraphSchedule, compute_threads: int) -> int:
    """The inter-op threads of the graph twin's workers: one per group that may wait for a core
    at once beside the ``compute_threads`` that wait on one, and one more for
    TensorFlow's gRPC server, which runs its handlers of the PS's gradient requests on the same
    pool (``probe_model.build_graph_twin_probe_loss``). How many groups wait at once is estimated
    by ``widest_level``, not bounded: groups of different depths can be ready together too, so a
    step could still find every thread held."""
    return compute_threads + widest_level(schedule) + 1


def probe_with_tensorflow(measure: MeasureRequest, graph: Any, compute_s: float, download_bytes: int,
                          upload_bytes: int, duration_s: float, repeats: int, out_dir: Path,
                          say: Any, twin_shape: str = DEFAULT_TWIN_SHAPE) -> dict[str, Any]:
    """Run the probe alone on ``measure``'s shaped link and return it as a link-probe.json
    document; its measurement stays in ``out_dir``."""
    request = tensorflow_probe_request(measure, graph, compute_s, duration_s, repeats, out_dir, twin_shape)
    measured = load_measured(run_measure(request, progress=lambda text: say(f"  probe: {text}")))
    return link_probe_of_measurement(measured, download_bytes, upload_bytes, compute_s, measure.tcp_congestion_control)


def link_probe_of_measurement(measured: dict[str, Any], download_bytes: int, upload_bytes: int,
                              compute_s: float, tcp_congestion_control: str) -> dict[str, Any]:
    """The link-probe.json of a TensorFlow probe: each run's rate per worker count. It saw no
    link activity of single connections, so it holds the neutral efficiencies (1) that the
    calibration fits from the rates alone."""
    points = []
    for point in measured["points"]:
        for rate in point.get("run_steps_per_second") or [point["steps_per_second"]]:
            points.append({"workers": int(point["workers"]), "steps_per_second": float(rate),
                           "cpu_saturated": bool(point.get("cpu_saturated", False))})
    return {"bandwidth_bps": measured["bandwidth_bps"], "download_bytes": download_bytes,
            "upload_bytes": upload_bytes, "compute_s": compute_s,
            "tcp_congestion_control": tcp_congestion_control,
            "transport": TENSORFLOW_TRANSPORT, "points": points,
            "contention_efficiency": 1.0, "download_reverse_efficiency": 1.0, "upload_reverse_efficiency": 1.0}
