"""Inception-like: modules of parallel 1x1, 3x3, 5x5 and pooling branches joined by concat."""

from __future__ import annotations

import tensorflow as tf

from models import layers

IMAGE_SIZE = 32
WIDTH = 16
MODULES = 3
CLASSES = 10


def inception_module(x: tf.Tensor, name: str, width: int) -> tf.Tensor:
    """Four branches on the same input: the branching that gives the step graph parallel paths."""
    with tf.compat.v1.variable_scope(name):
        b1 = layers.conv2d(x, "b1_1x1", width, kernel=1)
        b2 = layers.conv2d(layers.conv2d(x, "b2_reduce", width, kernel=1), "b2_3x3", width * 2, kernel=3)
        b3 = layers.conv2d(layers.conv2d(x, "b3_reduce", width // 2, kernel=1), "b3_5x5", width, kernel=5)
        b4 = layers.conv2d(layers.avg_pool(x), "b4_pool_proj", width, kernel=1)
        return tf.concat([b1, b2, b3, b4], axis=3)


def build(batch_size: int, width: int = WIDTH, image_size: int = IMAGE_SIZE) -> tf.Tensor:
    """Loss of one synthetic batch; ``width`` scales every layer's channels, ``image_size`` the input."""
    images, labels = layers.synthetic_images(batch_size, image_size, classes=CLASSES)
    x = layers.conv2d(images, "stem", width * 2, kernel=3)
    x = layers.max_pool(x)
    for i in range(MODULES):
        x = inception_module(x, f"mixed{i + 1}", width * (i + 1))
        if i % 2 == 1:
            x = layers.max_pool(x)
    x = tf.reduce_mean(x, axis=[1, 2])
    logits = layers.dense(x, "logits", CLASSES, relu=False)
    return layers.softmax_loss(logits, labels)
