"""Large MLP: few FLOPs per byte of parameters, so it is communication-heavy on a PS link."""

from __future__ import annotations

import tensorflow as tf

from models import layers

INPUT_UNITS = 784
WIDTH = 1024  # units of the first hidden layer; the last is half as wide
DEPTH = 3
CLASSES = 10


def build(batch_size: int, width: int = WIDTH, depth: int = DEPTH, input_units: int = INPUT_UNITS) -> tf.Tensor:
    """Loss of one synthetic batch through ``depth`` hidden layers of about ``width`` units."""
    x = tf.random.uniform([batch_size, input_units], name="features")
    labels = tf.random.uniform([batch_size], maxval=CLASSES, dtype=tf.int32, name="labels")
    for i in range(depth):
        units = width if i < depth - 1 else max(width // 2, 1)
        x = layers.dense(x, f"fc{i + 1}", units)
    logits = layers.dense(x, "logits", CLASSES, relu=False)
    return layers.softmax_loss(logits, labels)
