"""Layer helpers built from variables and ``tf.nn`` ops.

``tf.compat.v1.layers`` is gone under Keras 3, and the collector needs every trainable tensor
to be a plain ``get_variable`` so ``replica_device_setter`` can put it on the PS. These helpers
are the only place the zoo creates variables.
"""

from __future__ import annotations

import tensorflow as tf

v1 = tf.compat.v1


def _he_init(fan_in: int) -> tf.Tensor:
    return v1.truncated_normal_initializer(stddev=(2.0 / max(fan_in, 1)) ** 0.5)


def conv2d(x: tf.Tensor, name: str, filters: int, kernel: int, stride: int = 1, relu: bool = True) -> tf.Tensor:
    """Convolution + bias (+ ReLU), NHWC, SAME padding."""
    in_ch = int(x.shape[-1])
    with v1.variable_scope(name):
        w = v1.get_variable("kernel", [kernel, kernel, in_ch, filters], initializer=_he_init(kernel * kernel * in_ch))
        b = v1.get_variable("bias", [filters], initializer=v1.zeros_initializer())
        y = tf.nn.bias_add(tf.nn.conv2d(x, w, strides=[1, stride, stride, 1], padding="SAME"), b)
        return tf.nn.relu(y) if relu else y


def dense(x: tf.Tensor, name: str, units: int, relu: bool = True) -> tf.Tensor:
    """Fully connected layer + bias (+ ReLU)."""
    in_units = int(x.shape[-1])
    with v1.variable_scope(name):
        w = v1.get_variable("kernel", [in_units, units], initializer=_he_init(in_units))
        b = v1.get_variable("bias", [units], initializer=v1.zeros_initializer())
        y = tf.nn.bias_add(tf.matmul(x, w), b)
        return tf.nn.relu(y) if relu else y


def max_pool(x: tf.Tensor, size: int = 2, stride: int = 2) -> tf.Tensor:
    return tf.nn.max_pool2d(x, ksize=size, strides=stride, padding="SAME")


def avg_pool(x: tf.Tensor, size: int = 3, stride: int = 1) -> tf.Tensor:
    return tf.nn.avg_pool2d(x, ksize=size, strides=stride, padding="SAME")


def flatten(x: tf.Tensor) -> tf.Tensor:
    dims = 1
    for d in x.shape[1:]:
        dims *= int(d)
    return tf.reshape(x, [-1, dims])


def synthetic_images(
    batch_size: int, image_size: int, channels: int = 3, classes: int = 10
) -> tuple[tf.Tensor, tf.Tensor]:
    """Random images and labels made on the worker, so no input pipeline or data set is needed."""
    images = tf.random.uniform([batch_size, image_size, image_size, channels], name="images")
    labels = tf.random.uniform([batch_size], maxval=classes, dtype=tf.int32, name="labels")
    return images, labels


def softmax_loss(logits: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits), name="loss")
