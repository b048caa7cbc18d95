"""Wide-and-deep recommender: embedding tables on the PS that a step reads by rows.

What parameter servers mostly serve today: click-through models whose categorical features
(user, item, ...) index large embedding tables. A step looks up only the rows its batch
names, so it downloads ``batch x fields`` rows, not the table, and sends back sparse gradients
(``IndexedSlices``: the rows' gradients and their ids) that the PS applies row by row. The
lookup runs on the PS next to the table (``embedding_lookup`` colocates its gather with it):
the ids go up, the rows come down.

The deep part embeds every field in a ``rows x dim`` table and feeds the concatenation,
with dense features, through a small MLP; the wide part is a ``rows x 1`` table of weights
summed per example (a linear model over the same ids). Ids are drawn uniformly, as a hashed
feature spreads them.
"""

from __future__ import annotations

import tensorflow as tf

from models import layers

v1 = tf.compat.v1

ROWS = 100_000  # rows of each table: hashed ids of all fields
DIM = 32
FIELDS = 8  # categorical features per example
DENSE_FEATURES = 13
HIDDEN = 256


def build(batch_size: int, rows: int = ROWS, dim: int = DIM, fields: int = FIELDS, hidden: int = HIDDEN) -> tf.Tensor:
    """Loss of one synthetic batch of ``fields`` ids and ``DENSE_FEATURES`` numbers per example."""
    ids = tf.random.uniform([batch_size, fields], maxval=rows, dtype=tf.int64, name="ids")
    numbers = tf.random.uniform([batch_size, DENSE_FEATURES], name="dense_features")
    labels = tf.cast(tf.random.uniform([batch_size, 1], maxval=2, dtype=tf.int32), tf.float32, name="clicks")
    deep_table = v1.get_variable("deep/embedding", [rows, dim],
                                 initializer=v1.random_normal_initializer(stddev=dim ** -0.5))
    wide_table = v1.get_variable("wide/weights", [rows, 1], initializer=v1.zeros_initializer())
    embedded = tf.reshape(tf.nn.embedding_lookup(deep_table, ids), [batch_size, fields * dim])
    x = tf.concat([embedded, numbers], axis=1)
    x = layers.dense(x, "deep/fc1", hidden)
    x = layers.dense(x, "deep/fc2", max(hidden // 2, 1))
    deep_logit = layers.dense(x, "deep/logit", 1, relu=False)
    wide_logit = tf.reduce_sum(tf.nn.embedding_lookup(wide_table, ids), axis=1)
    logits = deep_logit + wide_logit
    return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits), name="loss")
