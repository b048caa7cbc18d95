"""The worker side of ``profile``: warm up, time untraced steps, then trace steps to files.

Runs inside the worker task process. Untraced steps are timed as well as traced ones because
FULL_TRACE slows a step down; the replay engine uses the untraced rate to correct for that.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

import tensorflow as tf

from tracetool.atomic_files import write_text_atomically
from tracetool.cluster.task_spec import TaskSpec
from tracetool.collect.training_graph import build_training_graph

v1 = tf.compat.v1

# Rendezvous inputs are named like "fc1/MatMul/ReadVariableOp_S1"; TF's timeline matches inputs
# to producers by name, so without stripping the suffix it draws no dataflow arrows.
_RENDEZVOUS_SUFFIX = re.compile(r"_S\d+(?=[,)\s:]|$)")
_BYTES_FIELD = re.compile(r"^\[[^\]]*\]")


def session_config(spec: TaskSpec, task_index: int) -> v1.ConfigProto:
    return v1.ConfigProto(
        intra_op_parallelism_threads=spec.intra_op_threads,
        inter_op_parallelism_threads=spec.inter_op_threads,
        # between-graph replication: a worker needs only the PS and itself
        device_filters=["/job:ps", f"/job:worker/task:{task_index}"],
        # on a GPU, an op without a GPU kernel (string ops, some int32 shape math) runs on the host
        allow_soft_placement=spec.device == "gpu",
    )


def chrome_timeline(step_stats: object) -> str:
    from tensorflow.core.framework import step_stats_pb2
    from tensorflow.python.client import timeline

    stats = step_stats_pb2.StepStats()
    stats.CopyFrom(step_stats)
    for dev in stats.dev_stats:
        for node in dev.node_stats:
            if node.node_name == "RecvTensor":
                # TF's timeline keeps only the node name of a transfer; put the label (with the exact
                # byte count) there so the Chrome file alone still says what moved and how much.
                if node.output:
                    exact = node.output[0].tensor_description.allocation_description.requested_bytes
                    node.timeline_label = _BYTES_FIELD.sub(f"[{exact}B]", node.timeline_label, count=1)
                node.node_name = node.timeline_label
                node.timeline_label = f"{node.node_name} = RecvTensor()"
            else:
                node.timeline_label = _RENDEZVOUS_SUFFIX.sub("", node.timeline_label)
    return timeline.Timeline(stats).generate_chrome_trace_format(show_dataflow=True)


def wait_for_initialized_variables(sess: v1.Session, timeout_s: float = 120.0) -> None:
    """Non-chief workers must not train on variables the chief has not initialized yet."""
    uninitialized = v1.report_uninitialized_variables()
    deadline = time.monotonic() + timeout_s
    while len(sess.run(uninitialized)) > 0:
        if time.monotonic() > deadline:
            raise RuntimeError("variables were not initialized by the chief worker in time")
        time.sleep(0.2)


def worker_out_dir(spec: TaskSpec, task_index: int) -> Path:
    """One worker's traces lie in the profile folder itself; several workers' in worker-<i>/."""
    if len(spec.cluster.get("worker", [])) <= 1:
        return Path(spec.out_dir)
    return Path(spec.out_dir) / f"worker-{task_index}"


def run_profile(spec: TaskSpec, target: str, task_index: int, emit: Callable[..., None]) -> None:
    out_dir = worker_out_dir(spec, task_index)
    if spec.device == "gpu" and not tf.config.list_physical_devices("GPU"):
        raise RuntimeError("--device gpu: TensorFlow sees no GPU in the worker process")
    training = build_training_graph(
        spec.model, spec.batch_size, spec.optimizer, spec.cluster, task_index, spec.learning_rate, spec.model_kwargs,
        device=spec.device,
    )
    emit("graph_built", variables=training.variables, tensorflow_version=tf.__version__,
         model_facts=training.model_facts)
    total = spec.warmup_steps + spec.untraced_steps + spec.traced_steps
    done = 0
    with v1.Session(target, graph=training.graph, config=session_config(spec, task_index)) as sess:
        if task_index == 0:
            sess.run(training.init_op)
        else:
            with training.graph.as_default():
                wait_for_initialized_variables(sess)
        for _ in range(spec.warmup_steps):
            sess.run(training.train_op)
            done += 1
            emit("step", phase="warmup", done=done, total=total)
        untraced_s = []
        for _ in range(spec.untraced_steps):
            start = time.perf_counter()
            sess.run(training.train_op)
            untraced_s.append(time.perf_counter() - start)
            done += 1
            emit("step", phase="untraced", done=done, total=total, step_time_s=untraced_s[-1])
        traced_s = []
        options = v1.RunOptions(trace_level=v1.RunOptions.FULL_TRACE, output_partition_graphs=True)
        for k in range(spec.traced_steps):
            metadata = v1.RunMetadata()
            start = time.perf_counter()
            sess.run(training.train_op, options=options, run_metadata=metadata)
            traced_s.append(time.perf_counter() - start)
            write_text_atomically(out_dir / f"step-{k:03d}.runmeta.pb", metadata.SerializeToString())
            write_text_atomically(out_dir / f"step-{k:03d}.timeline.json", chrome_timeline(metadata.step_stats))
            done += 1
            emit("step", phase="traced", done=done, total=total, step_time_s=traced_s[-1])
    emit("profile_done", untraced_step_times_s=untraced_s, traced_step_times_s=traced_s)
