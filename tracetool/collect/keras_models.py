"""Train a Keras model (an application of ``models.keras_applications`` or a user's
``build_keras()``) inside the collector's graph, as a zoo model's ``build`` is trained.

The collector builds a TensorFlow 1 style graph: variables placed on the PS by
``replica_device_setter``, a ``tf.compat.v1.train`` optimizer, partition graphs and RunMetadata
to trace. ``tf_keras`` (Keras 2, the ``tf-keras`` package of the same version as TensorFlow)
builds its layers in such a graph, so a Keras model here is the same model a user trains.
Keras 3, which TensorFlow 2.21 installs as ``keras``, does not: its variables are Keras
objects that ``tf.compat.v1.train`` optimizers refuse (``'Variable' object has no attribute
'_in_graph_mode'``), and it has no graph-mode training. See docs/models.md.

What a model needs besides its layers is made up here: a synthetic batch of the model's input
shape and labels of its output's shape, so a profile needs no data set. Batch-norm moving
averages are real training work (small uploads and PS ops every step), so their update ops go
into ``UPDATE_OPS``, which the collector runs with every step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf

from tracetool.errors import ToolError

v1 = tf.compat.v1

# Where the facts of a Keras model go for the profile (tracetool.collect.training_graph reads
# them): Keras's own parameter count, checked against the variables the graph really holds.
MODEL_FACTS_COLLECTION = "tfsim_model_facts"


def keras_module() -> Any:
    """``tf_keras``, or a one-line error saying how to install it."""
    try:
        import tf_keras
    except ImportError:
        raise ToolError("Keras models need the tf-keras package of TensorFlow's version; "
                        "install the collector with: pip install 'tfsim[collector]'") from None
    return tf_keras


def synthetic_inputs(model: Any, batch_size: int) -> list[tf.Tensor]:
    """One random batch per model input: uniform floats, or zeros for integer inputs (ids whose
    range the model does not declare)."""
    if not getattr(model, "inputs", None):
        raise ToolError("the Keras model has no declared inputs; build it with keras.Input(shape=...) "
                        "(functional) or give a Sequential model its input shape")
    batch = []
    for spec in model.inputs:
        shape = [batch_size, *[int(d) if d is not None else 1 for d in spec.shape[1:]]]
        dtype = tf.as_dtype(spec.dtype)
        if dtype.is_integer:
            batch.append(tf.zeros(shape, dtype=dtype, name="ids"))
        else:
            batch.append(tf.random.uniform(shape, dtype=dtype, name="features"))
    return batch


def synthetic_labels(outputs: tf.Tensor, loss: Any, batch_size: int) -> tf.Tensor:
    """Labels the loss accepts: class ids for sparse losses, one-hot rows of the output's shape
    for the others (categorical and binary cross-entropy, squared error)."""
    classes = int(outputs.shape[-1]) if outputs.shape.rank and outputs.shape[-1] is not None else 1
    name = loss if isinstance(loss, str) else type(loss).__name__
    ids = tf.random.uniform([batch_size], maxval=max(classes, 1), dtype=tf.int32, name="labels")
    if "sparse" in name.lower():
        return ids
    one_hot = tf.one_hot(ids, classes, dtype=outputs.dtype)
    return tf.reshape(one_hot, [batch_size, *[int(d) for d in outputs.shape[1:]]]) if outputs.shape.rank else one_hot


def training_loss(model: Any, loss: Any, batch_size: int, description: dict[str, Any]) -> tf.Tensor:
    """The scalar loss of one synthetic batch through ``model`` in training mode.

    Checks that the variables the graph holds are Keras's own count of parameters (nothing lost,
    nothing invented), and records the count for the profile."""
    keras = keras_module()
    created_before = {id(v) for v in v1.global_variables()}
    # Building a functional model already called its layers once, on its Input placeholders; the
    # updates of that call would ask for a feed. Only this call's updates train.
    updates_before = {id(u) for u in model.updates}
    outputs = model(synthetic_inputs(model, batch_size), training=True)
    if isinstance(outputs, (list, tuple)):
        raise ToolError("a Keras model with several outputs is not supported yet; give a model with one output")
    loss_fn = keras.losses.get(loss)
    value = tf.reduce_mean(loss_fn(synthetic_labels(outputs, loss, batch_size), outputs), name="loss")
    for update in model.updates:
        if id(update) not in updates_before:
            v1.add_to_collection(v1.GraphKeys.UPDATE_OPS, update)
    held = sum(int(v.shape.num_elements()) for v in model.variables)
    count = int(model.count_params())
    if held != count:
        raise ToolError(f"the Keras model holds {held} parameters in its variables but count_params() says {count}")
    stray = [v.op.name for v in v1.global_variables() if id(v) not in created_before and v not in model.variables]
    v1.add_to_collection(MODEL_FACTS_COLLECTION, {
        **description,
        "keras_count_params": count,
        "keras_trainable_params": sum(int(v.shape.num_elements()) for v in model.trainable_variables),
        "keras_version": keras.__version__,
        "variables_outside_the_model": stray,
    })
    return value


def keras_build_function(build_keras: Callable[..., tuple[Any, Any]],
                         description: dict[str, Any]) -> Callable[..., Any]:
    """A zoo-style ``build(batch_size, **model_kwargs)`` that trains what ``build_keras(**model_kwargs)``
    returns: a Keras model and its loss (a Keras loss object, function or name)."""

    def build(batch_size: int, **model_kwargs: Any) -> tf.Tensor:
        keras_module()
        try:
            built = build_keras(**model_kwargs)
        except ValueError as exc:  # the model's own check of its arguments
            raise ToolError(str(exc)) from None
        if not (isinstance(built, tuple) and len(built) == 2):
            raise ToolError(f"{description.get('source', 'build_keras')}: build_keras() must return (model, loss), "
                            f"got {type(built).__name__}")
        model, loss = built
        return training_loss(model, loss, batch_size, {**description, **model_kwargs})

    return build
