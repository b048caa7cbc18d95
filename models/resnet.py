"""ResNet-like: residual blocks of two 3x3 convolutions with identity or projection shortcuts."""

from __future__ import annotations

import tensorflow as tf

from models import layers

IMAGE_SIZE = 32
WIDTH = 16
BLOCKS_PER_STAGE = (2, 2, 2)
CLASSES = 10


def residual_block(x: tf.Tensor, name: str, filters: int, stride: int) -> tf.Tensor:
    with tf.compat.v1.variable_scope(name):
        y = layers.conv2d(x, "conv_a", filters, kernel=3, stride=stride)
        y = layers.conv2d(y, "conv_b", filters, kernel=3, relu=False)
        shortcut = x
        if stride != 1 or int(x.shape[-1]) != filters:
            shortcut = layers.conv2d(x, "projection", filters, kernel=1, stride=stride, relu=False)
        return tf.nn.relu(y + shortcut)


def build(batch_size: int, width: int = WIDTH, image_size: int = IMAGE_SIZE) -> tf.Tensor:
    """Loss of one synthetic batch; ``width`` scales every layer's channels, ``image_size`` the input."""
    images, labels = layers.synthetic_images(batch_size, image_size, classes=CLASSES)
    x = layers.conv2d(images, "stem", width, kernel=3)
    for stage, blocks in enumerate(BLOCKS_PER_STAGE):
        for b in range(blocks):
            stride = 2 if (stage > 0 and b == 0) else 1
            x = residual_block(x, f"stage{stage + 1}_block{b + 1}", width * 2**stage, stride)
    x = tf.reduce_mean(x, axis=[1, 2])
    logits = layers.dense(x, "logits", CLASSES, relu=False)
    return layers.softmax_loss(logits, labels)
