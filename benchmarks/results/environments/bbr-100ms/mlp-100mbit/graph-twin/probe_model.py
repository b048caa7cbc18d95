"""TensorFlow link probe of the step of mlp: 8 tensors, 9,533,480 B each way,
3.3 ms of compute in 30 groups of the model's ops, in its graph's shape. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_graph_twin_probe_loss

TENSOR_BYTES = [
    2097152, 4194304, 4096, 3211264, 40, 20480, 4096, 2048,
]
# per tensor: the groups that wait for it; per group: the groups it waits for, and its compute
GATES = [
    [9, 19], [8, 24], [8], [7], [10], [10, 14], [7], [9],
]
GROUP_INPUTS = [
    [], [], [], [], [], [], [1, 4, 5], [3],
    [7], [8], [9], [6, 10], [0, 11], [12], [12], [9, 12],
    [14, 15], [9, 14, 15], [17], [17], [8, 17], [19, 20], [8, 19, 20], [22],
    [22], [7, 22], [24, 25], [7, 24, 25], [27], [3, 27],
]
GROUP_COMPUTE_S = [
    1e-05, 1e-06, 2e-06, 0.000148, 1e-06, 1e-06,
    1e-05, 0.000353, 0.00043, 0.000192, 2.5e-05, 1.5e-05,
    8e-06, 4e-06, 1.4e-05, 9e-06, 2e-06, 5.1e-05,
    4e-06, 0.000225, 0.000138, 4e-06, 0.000241, 9e-06,
    0.000427, 0.00035, 5e-06, 0.000295, 1.1e-05, 0.000331,
]
# per tensor: the group after which its gradient leaves (-1: after every group)
RELEASE_GROUP = [
    21, 26, 28, 29, 13, 16, 23, 18,
]
COMPUTE_S = 0.015479437456361156
# the model's inter-op threads: at most this many groups wait at once
COMPUTE_THREADS = 1


def build(batch_size: int):
    return build_graph_twin_probe_loss(TENSOR_BYTES, GATES, GROUP_INPUTS, GROUP_COMPUTE_S,
                                       RELEASE_GROUP, COMPUTE_THREADS)
