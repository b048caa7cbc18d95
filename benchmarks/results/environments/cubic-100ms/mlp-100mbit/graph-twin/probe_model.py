"""TensorFlow link probe of the step of mlp: 8 tensors, 9,533,480 B each way,
8.8 ms of compute in 30 groups of the model's ops, in its graph's shape. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_graph_twin_probe_loss

TENSOR_BYTES = [
    40, 4194304, 4096, 4096, 20480, 3211264, 2048, 2097152,
]
# per tensor: the groups that wait for it; per group: the groups it waits for, and its compute
GATES = [
    [10], [8, 24], [7], [8], [10, 15], [7], [9], [9, 19],
]
GROUP_INPUTS = [
    [], [], [], [], [], [], [1, 2, 3], [0],
    [7], [8], [9], [6, 10], [4, 11], [12], [9, 12], [12],
    [14, 15], [9, 14, 15], [17], [17], [8, 17], [19, 20], [8, 19, 20], [22],
    [22], [7, 22], [24, 25], [7, 24, 25], [27], [0, 27],
]
GROUP_COMPUTE_S = [
    0.000441, 6e-06, 4e-06, 4e-06, 5e-06, 4e-06,
    2.9e-05, 0.001006, 0.001127, 0.000413, 4.2e-05, 4e-05,
    2.6e-05, 1.3e-05, 2.4e-05, 3.6e-05, 7e-06, 0.000145,
    1e-05, 0.00064, 0.000325, 1.1e-05, 0.000508, 3.2e-05,
    0.001401, 0.001019, 1.4e-05, 0.000825, 3.1e-05, 0.000581,
]
# per tensor: the group after which its gradient leaves (-1: after every group)
RELEASE_GROUP = [
    13, 26, 28, 23, 16, 29, 18, 21,
]
COMPUTE_S = 0.013377521654573954
# the model's inter-op threads: at most this many groups wait at once
COMPUTE_THREADS = 1


def build(batch_size: int):
    return build_graph_twin_probe_loss(TENSOR_BYTES, GATES, GROUP_INPUTS, GROUP_COMPUTE_S,
                                       RELEASE_GROUP, COMPUTE_THREADS)
