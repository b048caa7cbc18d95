"""Experiment: inception's probe with CPU work of fixed amount, the forward pass gated by each layer's tensors."""
import numpy as np
import tensorflow as tf
from tracetool.measure.probe_model import tensor_elements, GRADIENT_SCALE
v1 = tf.compat.v1
TENSOR_BYTES = [384, 192, 128, 0, 10240, 0, 0, 0, 165888, 30720, 51200, 0, 128, 0, 192, 0, 64, 10240, 0, 64, 30720, 256, 5120, 64, 128, 2048, 192, 128, 0, 18432, 1024, 2048, 12800, 64, 0, 0, 2048, 64, 0, 128, 0, 32, 3456, 0, 192, 0, 128, 115200, 96, 10240, 73728, 0, 40, 0, 15360, 0, 0, 30720, 9600]
LAYER = ['mixed3', 'mixed3', 'mixed2', 'mixed2', 'mixed2', 'mixed3', 'mixed2', 'mixed3', 'mixed3', 'mixed3', 'mixed2', 'mixed2', 'mixed2', 'mixed3', 'mixed3', 'mixed2', 'mixed2', 'mixed2', 'mixed1', 'mixed1', 'mixed3', 'mixed2', 'mixed2', 'mixed1', 'mixed1', 'mixed1', 'mixed3', 'mixed2', 'mixed1', 'mixed1', 'mixed1', 'mixed1', 'mixed1', 'mixed1', 'mixed1', 'mixed1', 'mixed1', 'mixed1', 'mixed1', 'stem', 'mixed1', 'mixed1', 'stem', 'stem', 'mixed3', 'mixed3', 'mixed2', 'mixed3', 'mixed3', 'mixed2', 'mixed2', 'mixed3', 'logits', 'mixed3', 'mixed3', 'mixed2', 'mixed2', 'mixed3', 'logits']
LAYERS = ['stem', 'mixed1', 'mixed2', 'mixed3', 'logits']
FORWARD_MS = [1.32, 2.67, 5.96, 3.7, 0.2]
FORWARD_END_MS = 20.78
RELEASE_MS = [26.35, 23.03, 34.63, 55.88, 33.91, 55.88, 55.88, 55.88, 27.25, 22.58, 44.89, 55.88, 35.91, 55.88, 24.04, 55.88, 48.37, 38.03, 55.88, 49.16, 23.9, 41.99, 45.94, 51.41, 41.94, 47.93, 30.24, 53.84, 55.88, 52.82, 51.18, 49.03, 50.58, 53.82, 55.88, 55.88, 53.53, 55.81, 55.88, 55.76, 55.88, 51.33, 55.63, 55.88, 34.48, 55.88, 55.88, 29.07, 42.06, 41.79, 40.38, 55.88, 30.29, 55.88, 29.85, 55.88, 55.88, 28.3, 20.82]
ITERS_PER_MS = 39000


def _work(ms):
    import time
    def run(*_):
        time.sleep(ms / 1e3)
        return np.float32(1.0)
    return run


def build(batch_size: int):
    variables = [v1.get_variable(f"tensor_{i}", [tensor_elements(s)], initializer=v1.ones_initializer())
                 for i, s in enumerate(TENSOR_BYTES)]
    reads = [tf.identity(v) for v in variables]
    every_download = tf.add_n([r[0] for r in reads])
    previous = tf.constant(1.0)
    for name, ms in zip(LAYERS, FORWARD_MS):
        inputs = tf.add_n([r[0] for r, l in zip(reads, LAYER) if l == name])
        previous = tf.reshape(tf.numpy_function(_work(ms), [previous, inputs], tf.float32, stateful=True), [])
    stages = {}
    previous_t = FORWARD_END_MS
    for t in sorted(set(RELEASE_MS)):
        previous = tf.reshape(tf.numpy_function(_work(max(0.0, t - previous_t)), [previous], tf.float32,
                                                stateful=True), [])
        stages[t] = previous
        previous_t = t
    terms = []
    for r, t in zip(reads, RELEASE_MS):
        factor = tf.stop_gradient(stages[t] + 0.0 * every_download)
        terms.append(GRADIENT_SCALE * factor * tf.reduce_sum(r * tf.stop_gradient(r)))
    return tf.add_n(terms)
