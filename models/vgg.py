"""VGG-like: stacks of 3x3 convolutions doubling in width after each pooling stage."""

from __future__ import annotations

import tensorflow as tf

from models import layers

IMAGE_SIZE = 32
WIDTH = 8
STAGES = (2, 2, 2)  # convolutions per stage
CLASSES = 10


def build(batch_size: int) -> tf.Tensor:
    images, labels = layers.synthetic_images(batch_size, IMAGE_SIZE, classes=CLASSES)
    x = images
    for stage, convs in enumerate(STAGES):
        for i in range(convs):
            x = layers.conv2d(x, f"conv{stage + 1}_{i + 1}", WIDTH * 2**stage, kernel=3)
        x = layers.max_pool(x)
    x = layers.flatten(x)
    x = layers.dense(x, "fc1", 256)
    x = layers.dense(x, "fc2", 256)
    logits = layers.dense(x, "fc3", CLASSES, relu=False)
    return layers.softmax_loss(logits, labels)
