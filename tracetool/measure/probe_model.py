"""The training graph of TensorFlow's link probe: a model's parameter tensors and no model.

Each step the worker reads every parameter tensor from the PS once (a download, as TensorFlow's
``RecvTensor`` moves it), waits for its compute, and sends a gradient of each tensor's size back
(the PS pulls it and applies it, as it applies a model's gradients). Three shapes of step:

- ``build_twin_probe_loss``, validate's probe of a profiled model: the model's compute in stages
  (``tracetool.measure.probe_schedule``), each waiting for the tensors the model's compute reads
  there, and each gradient sent after the stage where the model's backward pass produced it;
- ``build_graph_twin_probe_loss``, the same tensors and compute in the step graph's shape
  (``tracetool.measure.probe_graph_schedule``): groups of the model's ops that wait only for
  their own inputs, so that compute runs while tensors it does not need are still arriving;
- ``build_probe_loss``, the reference step of ``tracetool probe`` (no model yet): one wait of
  ``compute_s`` after every download, then every gradient, as backpropagation makes a model's
  gradients depend on its whole forward pass.

``tracetool.measure.tensorflow_probe`` writes the model file that calls them.

Imports TensorFlow: loaded only by the TensorFlow tasks the probe starts.
"""

from __future__ import annotations

import ctypes
import statistics
import sys
import threading
import time
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

v1 = tf.compat.v1
FLOAT_BYTES = 4
# Gradients this small leave the parameters near 1 for the whole probe, so no value overflows.
GRADIENT_SCALE = 1e-6


def tensor_elements(tensor_bytes: int) -> int:
    """float32 elements of a tensor of ``tensor_bytes`` bytes (at least one)."""
    return max(1, -(-int(tensor_bytes) // FLOAT_BYTES))


def _wait(seconds: float):
    """A stage of the probe's compute: a sleep, so the probe needs no core for it."""
    def run(*_: np.ndarray) -> np.float32:
        if seconds > 0:
            time.sleep(seconds)
        return np.float32(1.0)
    return run


def _parameter_variables(tensor_bytes: Sequence[int]) -> list[tf.Variable]:
    return [v1.get_variable(f"tensor_{index}", [tensor_elements(size)], initializer=v1.ones_initializer())
            for index, size in enumerate(tensor_bytes)]


def _parameter_reads(tensor_bytes: Sequence[int]) -> list[tf.Tensor]:
    # One read per variable and step: each use of a variable would otherwise read (and send) it again.
    return [tf.identity(variable) for variable in _parameter_variables(tensor_bytes)]


def _gradient_term(read: tf.Tensor, factor: tf.Tensor) -> tf.Tensor:
    """A loss term whose gradient is the size of ``read``'s tensor and waits for ``factor``."""
    return GRADIENT_SCALE * tf.stop_gradient(factor) * tf.reduce_sum(read * tf.stop_gradient(read))


def build_twin_probe_loss(tensor_bytes: Sequence[int], gate_stage: Sequence[int], release_after: Sequence[int],
                          stage_compute_s: Sequence[float], before_s: float) -> tf.Tensor:
    """The loss of the model's twin (``tracetool.measure.probe_schedule.ProbeSchedule``): stage
    ``k`` computes ``stage_compute_s[k]`` once stage ``k - 1`` is done and the tensors with
    ``gate_stage == k`` have arrived; tensor ``i``'s gradient leaves once ``release_after[i]``
    stages are done. ``before_s`` of compute runs from the step's start, beside the downloads."""
    reads = _parameter_reads(tensor_bytes)
    done = [tf.reshape(tf.numpy_function(_wait(before_s), [], tf.float32, stateful=True), [])]
    for stage, compute_s in enumerate(stage_compute_s):
        gated = [read[0] for read, gate in zip(reads, gate_stage, strict=True) if gate == stage]
        inputs = [done[-1]] + ([tf.add_n(gated)] if gated else [])
        done.append(tf.reshape(tf.numpy_function(_wait(compute_s), inputs, tf.float32, stateful=True), []))
    return tf.add_n([_gradient_term(read, done[after]) for read, after in zip(reads, release_after, strict=True)])


def build_graph_twin_probe_loss(tensor_bytes: Sequence[int], gates: Sequence[Sequence[int]],
                                group_inputs: Sequence[Sequence[int]], group_compute_s: Sequence[float],
                                release_group: Sequence[int], compute_threads: int = 1,
                                pull_bytes: Sequence[int] = (), pull_group: Sequence[int] = (),
                                pulled_by: Sequence[Sequence[int]] = ()) -> tf.Tensor:
    """The loss of the model's twin in the step graph's shape
    (``tracetool.measure.probe_graph_schedule.GraphSchedule``): group ``g`` computes
    ``group_compute_s[g]`` once the groups ``group_inputs[g]`` are done and the tensors gated on
    it have arrived, so that TensorFlow's executor runs the groups in any order their inputs
    allow, as it runs the model's ops; tensor ``i``'s gradient leaves once group
    ``release_group[i]`` is done (-1: every group). Tensor ``i`` leaves the PS only once the PS
    has taken the worker tensors ``pulled_by[i]`` of ``pull_bytes``, each made once group
    ``pull_group[p]`` is done (-1: at the step's start), as an embedding lookup's rows wait for
    the batch's ids.

    Each group is a call of a Python function, which costs TensorFlow's executor a call whatever
    it waits: that cost, measured here before the graph is built, is taken from every group's
    wait, and groups that compute less than it are folded into the groups after them
    (``fold_short_groups``), so that the twin's step computes what the model's does.

    At most ``compute_threads`` groups wait at once (the model's worker computes on that many
    inter-op threads), whatever threads the twin's worker runs: it needs more than the model's,
    because TensorFlow's gRPC server runs its handlers of the PS's gradient requests on the
    worker's inter-op pool, and a group's wait holds its thread as long as it waits. With one
    thread, resnet's twin had its gradients fetched only once all its groups were done (2.05 steps/s
    against the model's 3.07); given more, its groups waited side by side for 50 ms of its 250 ms
    of compute, which the model's one thread never does."""
    if compute_threads < 1:
        raise ValueError(f"compute_threads must be at least 1, got {compute_threads}")
    from tracetool.measure.probe_graph_schedule import GraphSchedule, fold_short_groups

    call_s = measured_call_cost_s()
    schedule = fold_short_groups(GraphSchedule(tuple(tensor_bytes), tuple(map(tuple, gates)),
                                               tuple(map(tuple, group_inputs)), tuple(group_compute_s),
                                               tuple(release_group), tuple(pull_bytes), tuple(pull_group),
                                               tuple(map(tuple, pulled_by))), call_s)
    variables = _parameter_variables(tensor_bytes)
    done: list[tf.Tensor] = []
    pulled: dict[int, tf.Tensor] = {}
    reads: dict[int, tf.Tensor] = {}

    def pull(p: int) -> tf.Tensor:
        if p not in pulled:
            g = schedule.pull_group[p]
            if g >= len(done):
                raise ValueError(f"pulled tensor {p} is made by group {g}, after a group that waits for it")
            # zeros the PS cannot know before the group is done, so nothing folds them away
            made = done[g] if g >= 0 else tf.random.uniform([])
            pulled[p] = tf.fill([tensor_elements(schedule.pull_bytes[p])], 0.0 * made)
        return pulled[p]

    def read(i: int) -> tf.Tensor:
        if i not in reads:
            pulls = [pull(p) for p in schedule.pulls_of(i)]
            if not pulls:
                reads[i] = tf.identity(variables[i])
            else:
                with tf.device(variables[i].device):  # on the PS: the pulled tensors go up first
                    taken = tf.add_n([tf.reduce_sum(t) for t in pulls])
                    reads[i] = tf.identity(variables[i]) + tf.stop_gradient(taken)
        return reads[i]

    gated_by: list[list[int]] = [[] for _ in schedule.group_compute_s]  # group -> the tensors it waits for
    for tensor, groups in enumerate(schedule.gates):
        for g in groups:
            gated_by[g].append(tensor)
    cores = threading.BoundedSemaphore(compute_threads)
    for g, compute_s in enumerate(schedule.group_compute_s):
        gated = [read(i)[0] for i in gated_by[g]]
        inputs = [done[i] for i in schedule.group_inputs[g]] + ([tf.add_n(gated)] if gated else [])
        wait = _wait_precisely(max(0.0, compute_s - call_s), cores)
        done.append(tf.reshape(tf.numpy_function(wait, inputs, tf.float32, stateful=True), []))
    every_group = tf.add_n(done)
    terms = [_gradient_term(read(i), done[g] if g >= 0 else every_group)
             for i, g in enumerate(schedule.release_group)]
    # groups no gradient waits for still run every step, as the model's ops do
    return tf.add_n(terms) + 0.0 * tf.stop_gradient(every_group)


def measured_call_cost_s(calls: int = 64, steps: int = 7) -> float:
    """What one call of a waiting function costs TensorFlow's executor beyond its wait, in a chain
    of ``calls`` of them: the median of ``steps`` steps after two to warm up, per call.

    Measured, not assumed: it is some 0.1 ms here on one day and 0.2 ms on a three times slower
    one, and its sleeps need no core, so a worker measures it alike before and during its runs."""
    graph = tf.Graph()
    with graph.as_default():
        done = tf.constant(0.0)
        for _ in range(calls):
            done = tf.reshape(tf.numpy_function(_wait_precisely(0.0), [done], tf.float32, stateful=True), [])
    # a chain runs one call at a time, whatever the threads; one of each, as a profiled worker runs
    config = v1.ConfigProto(device_count={"GPU": 0}, inter_op_parallelism_threads=1, intra_op_parallelism_threads=1)
    with v1.Session(graph=graph, config=config) as session:
        times = []
        for _ in range(steps + 2):
            start = time.perf_counter()
            session.run(done)
            times.append(time.perf_counter() - start)
    return statistics.median(times[2:]) / calls


def _wait_precisely(seconds: float, cores: threading.Semaphore | None = None):
    """A group's compute: a sleep to within some 20 µs of ``seconds``, on one of ``cores`` if given
    (the wait starts once one is free).

    Why: Linux wakes a sleeping thread up to 50 µs late by default (its timer slack) and this
    machine's sleeps overshoot by some 2% besides (100 µs on a 5 ms sleep), a cost per call that a
    twin of a few hundred groups pays a few hundred times a step. So the thread's timer slack is
    lowered to 1 ns (Linux's prctl; elsewhere the default stays) and the wait sleeps towards its
    deadline in shrinking steps."""
    def run(*_: np.ndarray) -> np.float32:
        if cores is None:
            _sleep_until(time.perf_counter() + seconds)
        else:
            with cores:
                _sleep_until(time.perf_counter() + seconds)
        return np.float32(1.0)
    return run


def _sleep_until(deadline: float) -> None:
    _fine_timer_slack()
    while (left := deadline - time.perf_counter()) > 20e-6:
        time.sleep(left * 0.9 if left > 300e-6 else left - 15e-6)


_FINE_SLACK = threading.local()
PR_SET_TIMERSLACK = 29


def _fine_timer_slack() -> None:
    """The calling thread's timer slack at 1 ns, once per thread (a no-op off Linux)."""
    if getattr(_FINE_SLACK, "set", False):
        return
    _FINE_SLACK.set = True
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None).prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0)
        except (OSError, AttributeError):
            pass


def build_probe_loss(tensor_bytes: Sequence[int], compute_s: float) -> tf.Tensor:
    """The probe's loss; the collector's training graph adds the optimizer that applies its gradients."""
    reads = _parameter_reads(tensor_bytes)
    every_download = tf.add_n([read[0] for read in reads])
    done = tf.reshape(tf.numpy_function(_wait(compute_s), [every_download], tf.float32, stateful=True), [])
    factor = done + 0.0 * every_download
    return tf.add_n([_gradient_term(read, factor) for read in reads])
