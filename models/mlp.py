"""Large MLP: few FLOPs per byte of parameters, so it is communication-heavy on a PS link."""

from __future__ import annotations

import tensorflow as tf

from models import layers

INPUT_UNITS = 784
HIDDEN_UNITS = (1024, 1024, 512)
CLASSES = 10


def build(batch_size: int) -> tf.Tensor:
    x = tf.random.uniform([batch_size, INPUT_UNITS], name="features")
    labels = tf.random.uniform([batch_size], maxval=CLASSES, dtype=tf.int32, name="labels")
    for i, units in enumerate(HIDDEN_UNITS):
        x = layers.dense(x, f"fc{i + 1}", units)
    logits = layers.dense(x, "logits", CLASSES, relu=False)
    return layers.softmax_loss(logits, labels)
