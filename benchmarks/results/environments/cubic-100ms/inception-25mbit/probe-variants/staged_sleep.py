"""Experiment: inception's probe whose gradients leave at the model's backward-pass times."""
import time
import numpy as np
import tensorflow as tf
from tracetool.measure.probe_model import tensor_elements, GRADIENT_SCALE
v1 = tf.compat.v1
TENSOR_BYTES = [384, 192, 128, 0, 10240, 0, 0, 0, 165888, 30720, 51200, 0, 128, 0, 192, 0, 64, 10240, 0, 64, 30720, 256, 5120, 64, 128, 2048, 192, 128, 0, 18432, 1024, 2048, 12800, 64, 0, 0, 2048, 64, 0, 128, 0, 32, 3456, 0, 192, 0, 128, 115200, 96, 10240, 73728, 0, 40, 0, 15360, 0, 0, 30720, 9600]
RELEASE_S = [0.01897, 0.01565, 0.02725, 0.04849, 0.02653, 0.04849, 0.04849, 0.04849, 0.01987, 0.0152, 0.03751, 0.04849, 0.02853, 0.04849, 0.01666, 0.04849, 0.04099, 0.03065, 0.04849, 0.04178, 0.01652, 0.03461, 0.03856, 0.04402, 0.03455, 0.04055, 0.02286, 0.04646, 0.04849, 0.04544, 0.0438, 0.04165, 0.0432, 0.04644, 0.04849, 0.04849, 0.04615, 0.04843, 0.04849, 0.04838, 0.04849, 0.04395, 0.04825, 0.04849, 0.0271, 0.04849, 0.04849, 0.02169, 0.03468, 0.03441, 0.033, 0.04849, 0.02291, 0.04849, 0.02247, 0.04849, 0.04849, 0.02092, 0.01343]
BUSY = False


def _wait(seconds):
    def run(_):
        if BUSY:
            end = time.perf_counter() + seconds
            x = 0.0
            while time.perf_counter() < end:
                x += 1.0
        else:
            time.sleep(seconds)
        return np.float32(1.0)
    return run


def build(batch_size: int):
    variables = [v1.get_variable(f"tensor_{i}", [tensor_elements(s)], initializer=v1.ones_initializer())
                 for i, s in enumerate(TENSOR_BYTES)]
    reads = [tf.identity(v) for v in variables]
    every_download = tf.add_n([r[0] for r in reads])
    stages = {}
    previous_t, previous = 0.0, every_download
    for t in sorted(set(RELEASE_S)):
        previous = tf.reshape(tf.numpy_function(_wait(t - previous_t), [previous], tf.float32, stateful=True), [])
        stages[t] = previous
        previous_t = t
    terms = []
    for r, t in zip(reads, RELEASE_S):
        factor = tf.stop_gradient(stages[t] + 0.0 * every_download)
        terms.append(GRADIENT_SCALE * factor * tf.reduce_sum(r * tf.stop_gradient(r)))
    return tf.add_n(terms)
