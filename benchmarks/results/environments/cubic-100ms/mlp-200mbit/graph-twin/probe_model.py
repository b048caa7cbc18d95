"""TensorFlow link probe of the step of mlp: 8 tensors, 9,533,480 B each way,
14.2 ms of compute in 30 groups of the model's ops, in its graph's shape. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_graph_twin_probe_loss

TENSOR_BYTES = [
    20480, 2048, 2097152, 4096, 3211264, 40, 4194304, 4096,
]
# per tensor: the groups that wait for it; per group: the groups it waits for, and its compute
GATES = [
    [10, 14], [9], [9, 19], [8], [7], [10], [8, 24], [7],
]
GROUP_INPUTS = [
    [], [], [], [], [], [], [1, 3, 4], [2],
    [7], [8], [9], [6, 10], [5, 11], [12], [12], [9, 12],
    [14, 15], [9, 14, 15], [17], [17], [8, 17], [19, 20], [8, 19, 20], [22],
    [22], [7, 22], [24, 25], [7, 24, 25], [27], [2, 27],
]
GROUP_COMPUTE_S = [
    0.000927, 7e-06, 0.000263, 5e-06, 4e-06, 6e-06,
    2.9e-05, 0.001314, 0.001678, 0.000728, 6.6e-05, 5.4e-05,
    3.3e-05, 1.8e-05, 5.2e-05, 3.3e-05, 9e-06, 0.000263,
    1.7e-05, 0.000756, 0.000558, 1.8e-05, 0.001059, 3.8e-05,
    0.001709, 0.001174, 2e-05, 0.002033, 3.8e-05, 0.001265,
]
# per tensor: the group after which its gradient leaves (-1: after every group)
RELEASE_GROUP = [
    16, 18, 21, 28, 29, 13, 26, 23,
]
COMPUTE_S = 0.015694820796521847
# the model's inter-op threads: at most this many groups wait at once
COMPUTE_THREADS = 1


def build(batch_size: int):
    return build_graph_twin_probe_loss(TENSOR_BYTES, GATES, GROUP_INPUTS, GROUP_COMPUTE_S,
                                       RELEASE_GROUP, COMPUTE_THREADS)
