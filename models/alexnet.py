"""AlexNet-like: five convolutions with large early kernels, then three dense layers."""

from __future__ import annotations

import tensorflow as tf

from models import layers

IMAGE_SIZE = 32
WIDTH = 16  # channels of the first convolution; later layers scale from it
CLASSES = 10


def build(batch_size: int) -> tf.Tensor:
    images, labels = layers.synthetic_images(batch_size, IMAGE_SIZE, classes=CLASSES)
    x = layers.conv2d(images, "conv1", WIDTH, kernel=5, stride=1)
    x = layers.max_pool(x)
    x = layers.conv2d(x, "conv2", WIDTH * 2, kernel=5)
    x = layers.max_pool(x)
    x = layers.conv2d(x, "conv3", WIDTH * 3, kernel=3)
    x = layers.conv2d(x, "conv4", WIDTH * 3, kernel=3)
    x = layers.conv2d(x, "conv5", WIDTH * 2, kernel=3)
    x = layers.max_pool(x)
    x = layers.flatten(x)
    x = layers.dense(x, "fc6", 256)
    x = layers.dense(x, "fc7", 256)
    logits = layers.dense(x, "fc8", CLASSES, relu=False)
    return layers.softmax_loss(logits, labels)
