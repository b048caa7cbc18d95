"""The worker side of ``measure``: train without tracing and count steps in a common window.

Runs inside each worker task process, locally or on a real host, so the same code measures
both. Workers agree on the window through a few coordination variables on the PS (TensorFlow's
own runtime, no side channel): each worker reports itself warm, the chief then publishes a
window start a little in the future on the wall clock, every worker counts its steps between
that start and start + ``duration_s``, writes its per-bin counts and CPU time back to the PS,
and keeps training until every worker is done, so no worker's window sees fewer competitors.
The chief then reads every worker's counts and reports them for the whole cluster.

Steps are counted fractionally: a step that straddles a bin boundary counts in each bin in
proportion to its time there, which keeps per-bin rates smooth when steps are long.

Under ``SyncReplicasOptimizer`` (``spec.sync`` sync or backup) the same protocol runs; the
chief also runs the update loop and counts the PS updates in the same bins, and every worker
closes the token queue as it stops, so that none waits for a token that will never come
(``tracetool.measure.sync_replicas``).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from pathlib import Path

import tensorflow as tf

from tracetool.atomic_files import write_text_atomically
from tracetool.cluster.task_spec import TaskSpec
from tracetool.collect.profile_worker import chrome_timeline, session_config
from tracetool.collect.training_graph import SyncReplicasConfig, build_training_graph
from tracetool.measure import sync_replicas
from tracetool.measure.sync_options import replicas_to_aggregate

v1 = tf.compat.v1

POLL_INTERVAL_S = 0.25
COORDINATION_SCOPE = "measure_coordination"


def window_bins(duration_s: float) -> tuple[int, float]:
    """Bins for batch means: about ten, none shorter than one second."""
    count = max(1, min(10, int(duration_s // 1.0)))
    return count, duration_s / count


def spread_over_bins(start_s: float, end_s: float, window_start_s: float, bin_s: float, counts: list[float]) -> None:
    """Add one step that ran from ``start_s`` to ``end_s`` to ``counts``, split by time in each bin."""
    length = end_s - start_s
    if length <= 0:
        return
    window_end = window_start_s + bin_s * len(counts)
    lo, hi = max(start_s, window_start_s), min(end_s, window_end)
    if hi <= lo:
        return
    first = int((lo - window_start_s) // bin_s)
    last = min(len(counts) - 1, int((hi - window_start_s) // bin_s))
    for b in range(first, last + 1):
        b_lo = window_start_s + b * bin_s
        overlap = min(hi, b_lo + bin_s) - max(lo, b_lo)
        if overlap > 0:
            counts[b] += overlap / length


def process_cpu_s() -> float:
    times = os.times()
    return times.user + times.system


class _Coordination:
    """Variables on the PS through which the workers agree on the measurement window."""

    def __init__(self, workers: int, bins: int) -> None:
        with v1.device("/job:ps/task:0"), v1.variable_scope(COORDINATION_SCOPE):
            zeros = v1.zeros_initializer()
            self.warm = v1.get_variable("warm_workers", [], tf.int32, zeros, trainable=False)
            self.finished = v1.get_variable("finished_workers", [], tf.int32, zeros, trainable=False)
            self.window_start = v1.get_variable("window_start_unix_s", [], tf.float64, zeros, trainable=False)
            self.bin_counts = v1.get_variable("bin_counts", [workers, bins], tf.float64, zeros, trainable=False)
            self.cpu_s = v1.get_variable("cpu_s", [workers], tf.float64, zeros, trainable=False)
            self.step_time_s = v1.get_variable("mean_step_time_s", [workers], tf.float64, zeros, trainable=False)
            self.mark_warm = self.warm.assign_add(1)
            self.mark_finished = self.finished.assign_add(1)
            self.start_value = v1.placeholder(tf.float64, [])
            self.publish_start = self.window_start.assign(self.start_value)
            self.task = v1.placeholder(tf.int32, [])
            self.row = v1.placeholder(tf.float64, [bins])
            self.cpu_value = v1.placeholder(tf.float64, [])
            self.step_value = v1.placeholder(tf.float64, [])
            self.report = tf.group(
                v1.scatter_update(self.bin_counts, [self.task], [self.row]),
                v1.scatter_update(self.cpu_s, [self.task], [self.cpu_value]),
                v1.scatter_update(self.step_time_s, [self.task], [self.step_value]),
            )
            self.init_op = v1.variables_initializer(
                [self.warm, self.finished, self.window_start, self.bin_counts, self.cpu_s, self.step_time_s]
            )


def _trace_steps(sess: v1.Session, train_op: tf.Operation, steps: int, out_dir: Path,
                 emit: Callable[..., None]) -> None:
    """Trace steps of the contended cluster in the format ``profile`` writes, so the same graph
    builder and timeline viewer read them next to replay's synthetic timelines."""
    options = v1.RunOptions(trace_level=v1.RunOptions.FULL_TRACE, output_partition_graphs=True)
    for k in range(steps):
        metadata = v1.RunMetadata()
        sess.run(train_op, options=options, run_metadata=metadata)
        write_text_atomically(out_dir / f"step-{k:03d}.runmeta.pb", metadata.SerializeToString())
        write_text_atomically(out_dir / f"step-{k:03d}.timeline.json", chrome_timeline(metadata.step_stats))
    emit("traced", steps=steps, out_dir=str(out_dir))


def _wait_for_variables(sess: v1.Session, uninitialized: tf.Tensor, emit: Callable[..., None]) -> None:
    announced = False
    while len(sess.run(uninitialized)) > 0:
        if not announced:
            emit("phase", phase="waiting for the chief to initialize variables")
            announced = True
        time.sleep(POLL_INTERVAL_S)


def sync_config(spec: TaskSpec) -> SyncReplicasConfig | None:
    """N and R of a synchronous spec (R defaults to N for sync, N - 1 for backup); None for async."""
    workers = len(spec.cluster["worker"])
    r = replicas_to_aggregate(spec.sync, spec.replicas_to_aggregate, workers)
    return None if r is None else SyncReplicasConfig(total_num_replicas=workers, replicas_to_aggregate=r)


def update_counts(updates: sync_replicas.UpdateLoop, window_start_s: float, bin_s: float,
                  bins: int) -> dict[str, object]:
    """PS updates per bin, each update spread over the time since the one before it, as steps are."""
    if updates.error is not None:
        raise RuntimeError(f"the chief's update loop failed: {updates.error}")
    counts = [0.0] * bins
    times = updates.finished_unix_s
    for before, after in zip(times, times[1:], strict=False):
        spread_over_bins(before, after, window_start_s, bin_s, counts)
    window_end_s = window_start_s + bins * bin_s
    return {"bin_updates": counts, "updates_in_window": sum(1 for t in times if window_start_s <= t < window_end_s)}


def run_measure(spec: TaskSpec, target: str, task_index: int, emit: Callable[..., None]) -> None:
    workers = len(spec.cluster["worker"])
    bins, bin_s = window_bins(spec.duration_s)
    config = sync_config(spec)
    training = build_training_graph(
        spec.model, spec.batch_size, spec.optimizer, spec.cluster, task_index, spec.learning_rate, spec.model_kwargs,
        sync=config,
    )
    sync = training.sync
    with training.graph.as_default():
        coord = _Coordination(workers, bins)
        # the global ones: a synchronous worker's local step is its own to initialize
        uninitialized = v1.report_uninitialized_variables(v1.global_variables())
    chief = task_index == 0
    emit("graph_built", variables=len(training.variables))
    updates: sync_replicas.UpdateLoop | None = None
    with v1.Session(target, graph=training.graph, config=session_config(spec, task_index)) as sess:
        if chief:
            sess.run([training.init_op, coord.init_op])
            if sync is not None:
                updates = sync_replicas.UpdateLoop(sess, sync)
        else:
            _wait_for_variables(sess, uninitialized, emit)
            if sync is not None:
                sync_replicas.init_local_step(sess, sync, emit)
        emit("phase", phase="warm-up")
        for _ in range(spec.warmup_steps):
            sess.run(training.train_op)
        sess.run(coord.mark_warm)
        emit("phase", phase="warm", unix_s=time.time())

        # keep training while the others warm up; the chief publishes the window start
        window_start = 0.0
        last_poll = 0.0
        while window_start == 0.0:
            sess.run(training.train_op)
            if time.monotonic() - last_poll >= POLL_INTERVAL_S:
                last_poll = time.monotonic()
                if chief and sess.run(coord.warm) >= workers:
                    window_start = time.time() + spec.settle_s
                    sess.run(coord.publish_start, {coord.start_value: window_start})
                else:
                    window_start = float(sess.run(coord.window_start))
        window_end = window_start + spec.duration_s
        emit("window", window_start_unix_s=window_start, window_end_unix_s=window_end, bins=bins, bin_s=bin_s)

        counts = [0.0] * bins
        step_times: list[float] = []
        # (start, duration) of every step that started in the window, relative to its start: shows
        # how the workers' steps interleave on the shared link
        step_spans: list[tuple[float, float]] = []
        cpu_at_start: float | None = None
        started = False
        while True:
            now = time.time()
            if cpu_at_start is None and now >= window_start:
                cpu_at_start = process_cpu_s()
                emit("window_started", unix_s=now)
            step_start = now
            sess.run(training.train_op)
            step_end = time.time()
            spread_over_bins(step_start, step_end, window_start, bin_s, counts)
            if step_start >= window_start:
                step_times.append(step_end - step_start)
                step_spans.append((round(step_start - window_start, 4), round(step_end - step_start, 4)))
                started = True
            if step_end >= window_end and started:
                break
        cpu_s = process_cpu_s() - (cpu_at_start if cpu_at_start is not None else process_cpu_s())
        mean_step_s = sum(step_times) / len(step_times) if step_times else math.nan
        emit("window_ended", unix_s=time.time(), steps=sum(counts), bin_counts=counts, cpu_s=cpu_s,
             mean_step_time_s=mean_step_s, step_spans_s=step_spans)
        if spec.traced_steps > 0 and spec.out_dir:
            # after the CPU window, before reporting finished: every other worker still trains
            _trace_steps(sess, training.train_op, spec.traced_steps, Path(spec.out_dir) / f"worker-{task_index}", emit)
        sess.run(coord.report, {coord.task: task_index, coord.row: counts, coord.cpu_value: cpu_s,
                                coord.step_value: mean_step_s})
        sess.run(coord.mark_finished)

        # keep the load on until every window is closed
        last_poll = 0.0
        while True:
            if time.monotonic() - last_poll >= POLL_INTERVAL_S:
                last_poll = time.monotonic()
                if sess.run(coord.finished) >= workers:
                    break
            try:
                sess.run(training.train_op)
            except sync_replicas.TOKENS_CLOSED:
                if sync is None:
                    raise
                break  # another worker saw every window closed and closed the token queue
        if sync is not None:
            sync_replicas.close_tokens(sess, sync)
        if chief:
            all_counts, all_cpu, all_step = sess.run([coord.bin_counts, coord.cpu_s, coord.step_time_s])
            extra = {}
            if updates is not None and config is not None:
                extra = {**update_counts(updates, window_start, bin_s, bins), "sync": spec.sync,
                         "replicas_to_aggregate": config.replicas_to_aggregate}
            emit("cluster_result", workers=workers, duration_s=spec.duration_s, bins=bins, bin_s=bin_s,
                 window_start_unix_s=window_start,
                 bin_counts=[[float(c) for c in row] for row in all_counts],
                 cpu_s=[float(c) for c in all_cpu], mean_step_time_s=[float(s) for s in all_step], **extra)
        if updates is not None:
            updates.stop()
    emit("measure_done")
