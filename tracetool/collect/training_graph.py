"""Build the between-graph-replicated training graph every worker process runs.

One function used by ``profile`` and ``measure`` alike, so the graph that is profiled is the
graph that is measured: variables on the PS via ``replica_device_setter``, the model's
computation on the worker, and the optimizer's update ops on the PS next to the variables.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import tensorflow as tf

from tracetool.cluster.task_spec import OPTIMIZERS
from tracetool.collect.model_loader import load_build_function

v1 = tf.compat.v1


@dataclass(frozen=True)
class TrainingGraph:
    graph: tf.Graph
    loss: tf.Tensor
    train_op: tf.Operation
    init_op: tf.Operation
    variables: list[dict[str, Any]]


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
) -> TrainingGraph:
    build = load_build_function(model)
    graph = tf.Graph()
    worker_device = f"/job:worker/task:{worker_task}"
    spec = v1.train.ClusterSpec(cluster)
    with graph.as_default():
        device_fn = v1.train.replica_device_setter(worker_device=worker_device, cluster=spec)
        with v1.device(device_fn):
            loss = build(batch_size, **(model_kwargs or {}))
            train_op = make_optimizer(optimizer, learning_rate).minimize(loss)
        init_op = v1.global_variables_initializer()
        variables = [
            {
                "name": var.op.name,
                "shape": [int(d) for d in var.shape],
                "dtype": var.dtype.base_dtype.name,
                "bytes": int(var.shape.num_elements()) * var.dtype.base_dtype.size,
                "trainable": var in v1.trainable_variables(),
            }
            for var in v1.global_variables()
        ]
    return TrainingGraph(graph=graph, loss=loss, train_op=train_op, init_op=init_op, variables=variables)
