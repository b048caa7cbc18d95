"""VGG-like: stacks of 3x3 convolutions doubling in width after each pooling stage."""

from __future__ import annotations

import tensorflow as tf

from models import layers

IMAGE_SIZE = 32
WIDTH = 24
STAGES = (2, 2, 2)  # convolutions per stage
CLASSES = 10


def build(batch_size: int, width: int = WIDTH, image_size: int = IMAGE_SIZE) -> tf.Tensor:
    """Loss of one synthetic batch; ``width`` scales every layer's channels, ``image_size`` the input."""
    images, labels = layers.synthetic_images(batch_size, image_size, classes=CLASSES)
    x = images
    for stage, convs in enumerate(STAGES):
        for i in range(convs):
            x = layers.conv2d(x, f"conv{stage + 1}_{i + 1}", width * 2**stage, kernel=3)
        x = layers.max_pool(x)
    x = layers.flatten(x)
    x = layers.dense(x, "fc1", 256)
    x = layers.dense(x, "fc2", 256)
    logits = layers.dense(x, "fc3", CLASSES, relu=False)
    return layers.softmax_loss(logits, labels)
