"""AlexNet-like: five convolutions with large early kernels, then three dense layers."""

from __future__ import annotations

import tensorflow as tf

from models import layers

IMAGE_SIZE = 32
WIDTH = 32  # channels of the first convolution; later layers scale from it
CLASSES = 10


def build(batch_size: int, width: int = WIDTH, image_size: int = IMAGE_SIZE) -> tf.Tensor:
    """Loss of one synthetic batch; ``width`` scales every layer's channels, ``image_size`` the input."""
    images, labels = layers.synthetic_images(batch_size, image_size, classes=CLASSES)
    x = layers.conv2d(images, "conv1", width, kernel=5, stride=1)
    x = layers.max_pool(x)
    x = layers.conv2d(x, "conv2", width * 2, kernel=5)
    x = layers.max_pool(x)
    x = layers.conv2d(x, "conv3", width * 3, kernel=3)
    x = layers.conv2d(x, "conv4", width * 3, kernel=3)
    x = layers.conv2d(x, "conv5", width * 2, kernel=3)
    x = layers.max_pool(x)
    x = layers.flatten(x)
    x = layers.dense(x, "fc6", 256)
    x = layers.dense(x, "fc7", 256)
    logits = layers.dense(x, "fc8", CLASSES, relu=False)
    return layers.softmax_loss(logits, labels)
