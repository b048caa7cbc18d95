"""The training graph of TensorFlow's link probe: a model's parameter tensors and no model.

Each step the worker reads every parameter tensor from the PS once (a download, as TensorFlow's
``RecvTensor`` moves it), waits ``compute_s`` (the step's compute that the transfers do not cover),
and sends a gradient of each tensor's size back (the PS pulls it and applies it, as it applies a
model's gradients). Every gradient depends on every downloaded tensor and on the wait, as
backpropagation makes a model's gradients depend on its whole forward pass, so a worker's uploads
start only when its downloads and compute are done. ``tracetool.measure.tensorflow_probe`` writes
a model file that calls ``build_probe_loss`` with the tensor sizes of the model being probed.

Imports TensorFlow: loaded only by the TensorFlow tasks the probe starts.
"""

from __future__ import annotations

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


def build_probe_loss(tensor_bytes: Sequence[int], compute_s: float) -> tf.Tensor:
    """The probe's loss; the collector's training graph adds the optimizer that applies its gradients."""
    variables = [v1.get_variable(f"tensor_{index}", [tensor_elements(size)], initializer=v1.ones_initializer())
                 for index, size in enumerate(tensor_bytes)]
    # One read per variable and step: each use of a variable would otherwise read (and send) it again.
    reads = [tf.identity(variable) for variable in variables]
    every_download = tf.add_n([read[0] for read in reads])

    def compute(_: np.ndarray) -> np.float32:
        time.sleep(compute_s)
        return np.float32(1.0)

    done = tf.reshape(tf.numpy_function(compute, [every_download], tf.float32, stateful=True), [])
    factor = tf.stop_gradient(done + 0.0 * every_download)
    return tf.add_n([GRADIENT_SCALE * factor * tf.reduce_sum(read * tf.stop_gradient(read)) for read in reads])
