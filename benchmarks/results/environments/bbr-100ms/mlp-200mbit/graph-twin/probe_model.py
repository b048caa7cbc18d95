"""TensorFlow link probe of the step of mlp: 8 tensors, 9,533,480 B each way,
0.0 ms of compute in 30 groups of the model's ops, in its graph's shape. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_graph_twin_probe_loss

TENSOR_BYTES = [
    20480, 2048, 4194304, 3211264, 2097152, 4096, 40, 4096,
]
# per tensor: the groups that wait for it; per group: the groups it waits for, and its compute
GATES = [
    [10, 15], [9], [8, 24], [7], [9, 20], [8], [10], [7],
]
GROUP_INPUTS = [
    [], [], [], [], [], [], [2, 3, 4], [1],
    [7], [8], [9], [6, 10], [5, 11], [12], [9, 12], [12],
    [14, 15], [9, 14, 15], [17], [8, 17], [17], [19, 20], [8, 19, 20], [22],
    [22], [7, 22], [24, 25], [7, 24, 25], [27], [1, 27],
]
GROUP_COMPUTE_S = [
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
]
# per tensor: the group after which its gradient leaves (-1: after every group)
RELEASE_GROUP = [
    16, 18, 26, 29, 21, 28, 13, 23,
]
COMPUTE_S = 0.014269836434841254
# the model's inter-op threads: at most this many groups wait at once
COMPUTE_THREADS = 1


def build(batch_size: int):
    return build_graph_twin_probe_loss(TENSOR_BYTES, GATES, GROUP_INPUTS, GROUP_COMPUTE_S,
                                       RELEASE_GROUP, COMPUTE_THREADS)
