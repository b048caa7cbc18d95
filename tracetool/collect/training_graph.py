"""Build the between-graph-replicated training graph every worker process runs.

One function used by ``profile`` and ``measure`` alike, so the graph that is profiled is the
graph that is measured: variables on the PS via ``replica_device_setter``, the model's
computation on the worker, and the optimizer's update ops on the PS next to the variables.

With ``sync`` the optimizer is wrapped in TensorFlow's own ``SyncReplicasOptimizer`` (what
``measure --sync sync|backup`` runs): the worker's step then pushes its gradients into
accumulators on the PS and takes a token, and the PS applies one update per R gradients. The
asynchronous graph (``sync`` None) is exactly the one ``profile`` traces.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import tensorflow as tf

from tracetool.cluster.task_spec import OPTIMIZERS
from tracetool.collect.keras_models import MODEL_FACTS_COLLECTION
from tracetool.collect.model_loader import load_build_function

v1 = tf.compat.v1


@dataclass(frozen=True)
class SyncReplicasConfig:
    """``SyncReplicasOptimizer``'s two numbers: N workers, R gradients aggregated per update."""

    total_num_replicas: int
    replicas_to_aggregate: int


@dataclass(frozen=True)
class SyncReplicasGraph:
    """The parts of a ``SyncReplicasOptimizer`` graph a session must run itself.

    ``make_session_run_hook`` would run them inside a MonitoredTrainingSession; the measurement
    uses a plain Session, so it runs them by hand (``tracetool.measure.sync_replicas``)."""

    optimizer: Any  # the SyncReplicasOptimizer
    global_step: tf.Variable
    chief_init_op: tf.Operation  # the chief's local step and the accumulators' global step
    local_step_init_op: tf.Operation  # every other worker's local step
    ready_for_local_init_op: tf.Tensor  # names of global variables not yet initialized
    init_tokens_op: tf.Operation  # the first R tokens, queued once by the chief
    close_tokens_op: tf.Operation  # ends the run: blocked token takes fail instead of waiting forever


@dataclass(frozen=True)
class TrainingGraph:
    graph: tf.Graph
    loss: tf.Tensor
    train_op: tf.Operation
    init_op: tf.Operation
    variables: list[dict[str, Any]]
    sync: SyncReplicasGraph | None = None
    model_facts: dict[str, Any] | None = None  # a Keras model's own parameter count and origin


def make_optimizer(name: str, learning_rate: float) -> v1.train.Optimizer:
    if name == "sgd":
        return v1.train.GradientDescentOptimizer(learning_rate)
    if name == "momentum":
        return v1.train.MomentumOptimizer(learning_rate, momentum=0.9)
    if name == "adam":
        return v1.train.AdamOptimizer(learning_rate)
    raise ValueError(f"unknown optimizer {name}; choose one of {', '.join(OPTIMIZERS)}")


def build_training_graph(
    model: str,
    batch_size: int,
    optimizer: str,
    cluster: dict[str, list[str]],
    worker_task: int,
    learning_rate: float = 0.01,
    model_kwargs: dict[str, Any] | None = None,
    sync: SyncReplicasConfig | None = None,
    device: str = "cpu",
) -> TrainingGraph:
    build = load_build_function(model)
    graph = tf.Graph()
    worker_device = f"/job:worker/task:{worker_task}" + ("/device:GPU:0" if device == "gpu" else "")
    spec = v1.train.ClusterSpec(cluster)
    with graph.as_default():
        device_fn = v1.train.replica_device_setter(worker_device=worker_device, cluster=spec)
        with v1.device(device_fn):
            loss = build(batch_size, **(model_kwargs or {}))
            # A Keras model's batch-norm moving averages: updated every step, as Keras's fit() does
            with v1.control_dependencies(v1.get_collection(v1.GraphKeys.UPDATE_OPS)):
                if sync is None:
                    train_op = make_optimizer(optimizer, learning_rate).minimize(loss)
                else:
                    train_op, sync_graph = _sync_replicas_train_op(make_optimizer(optimizer, learning_rate), loss,
                                                                   sync)
        init_op = v1.global_variables_initializer()
        reads = variable_reads(graph)
        variables = [
            {
                "name": var.op.name,
                "shape": [int(d) for d in var.shape],
                "dtype": var.dtype.base_dtype.name,
                "bytes": int(var.shape.num_elements()) * var.dtype.base_dtype.size,
                "trainable": var in v1.trainable_variables(),
                "read_by_worker": reads.get(var.op.name),
            }
            for var in v1.global_variables()
        ]
        facts = graph.get_collection(MODEL_FACTS_COLLECTION)
    return TrainingGraph(graph=graph, loss=loss, train_op=train_op, init_op=init_op, variables=variables,
                         sync=None if sync is None else sync_graph, model_facts=facts[0] if facts else None)


def variable_reads(graph: tf.Graph) -> dict[str, str]:
    """How a worker's step reads each variable it reads: ``"whole"`` (a ``ReadVariableOp`` whose
    value a worker op consumes: the variable is downloaded) or ``"rows"`` (a ``ResourceGather``
    next to the variable, whose rows a worker op consumes: an embedding lookup). Variables read
    only by PS ops (optimizer slots, or batch-norm statistics updated on the PS) are absent.

    Decided from the devices the replica device setter gave the ops, before any placement: a
    read is colocated with its variable on the PS, its consumers keep the device they were built
    on. The step graph's downloads are then exactly the "whole" variables plus the rows."""
    reads: dict[str, str] = {}
    for op in graph.get_operations():
        if op.type not in ("ReadVariableOp", "ResourceGather") or op.inputs[0].op.type != "VarHandleOp":
            continue
        on_worker = any("/job:worker" in consumer.device for out in op.outputs for consumer in out.consumers())
        if on_worker:
            name = op.inputs[0].op.name
            kind = "whole" if op.type == "ReadVariableOp" else "rows"
            reads[name] = "whole" if reads.get(name) == "whole" else kind
    return reads


def _sync_replicas_train_op(base: v1.train.Optimizer, loss: tf.Tensor,
                            sync: SyncReplicasConfig) -> tuple[tf.Operation, SyncReplicasGraph]:
    """``base`` wrapped in ``SyncReplicasOptimizer``; called under the replica device setter, so the
    global step, the accumulators and the token queue land on the PS."""
    global_step = v1.train.get_or_create_global_step()
    optimizer = v1.train.SyncReplicasOptimizer(
        base, replicas_to_aggregate=sync.replicas_to_aggregate, total_num_replicas=sync.total_num_replicas)
    train_op = optimizer.minimize(loss, global_step=global_step)
    tokens = optimizer.get_chief_queue_runner().queue
    return train_op, SyncReplicasGraph(
        optimizer=optimizer,
        global_step=global_step,
        chief_init_op=optimizer.chief_init_op,
        local_step_init_op=optimizer.local_step_init_op,
        ready_for_local_init_op=optimizer.ready_for_local_init_op,
        init_tokens_op=optimizer.get_init_tokens_op(),
        close_tokens_op=tokens.close(cancel_pending_enqueues=False),
    )
