"""TensorFlow link probe of the step of widedeep: 8 tensors, 442,372 B each way,
1.7 ms of compute in 60 groups of the model's ops, in its graph's shape. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_graph_twin_probe_loss

TENSOR_BYTES = [
    275456, 4, 512, 512, 131072, 1024, 32768, 1024,
]
# per tensor: the groups that wait for it; per group: the groups it waits for, and its compute
GATES = [
    [26, 55], [29], [29, 45], [27], [27, 50], [26], [24], [28],
]
GROUP_INPUTS = [
    [], [], [], [], [], [], [], [],
    [], [], [], [], [], [], [], [],
    [], [], [], [], [7, 13, 15], [6, 20], [3, 5, 11], [16, 22],
    [9], [10, 17, 24], [25], [26], [17], [27, 28], [0, 29], [0, 2, 30],
    [29], [29, 30, 32], [12, 33], [2, 34], [33, 35], [0, 30, 36], [0, 30, 36], [37, 38],
    [23, 31, 37, 39], [18, 40], [8, 41], [1, 42], [40], [40], [27, 40], [45, 46],
    [27, 45, 46], [48], [48], [26, 48], [50, 51], [26, 50, 51], [53], [53],
    [25, 53], [55, 56], [9, 14, 55, 56], [4, 58],
]
GROUP_COMPUTE_S = [
    1.4e-05, 5e-06, 4e-06, 4e-06, 4e-06, 4e-06,
    3e-06, 4e-06, 5e-06, 3e-06, 1.4e-05, 4e-06,
    3e-06, 3e-06, 3e-06, 4e-06, 4e-06, 3e-06,
    2.5e-05, 3e-06, 8.3e-05, 6e-06, 2.2e-05, 6e-06,
    6.6e-05, 2.9e-05, 0.00014, 6.4e-05, 2.4e-05, 2.6e-05,
    1.1e-05, 1.3e-05, 6e-06, 1.1e-05, 1.1e-05, 4e-06,
    4e-06, 7e-06, 5e-06, 3e-06, 7e-06, 5e-06,
    1.5e-05, 4e-06, 0.000149, 4e-05, 1.1e-05, 5e-06,
    8.6e-05, 8e-06, 5.4e-05, 4.1e-05, 8e-06, 0.000135,
    1e-05, 0.000119, 6.7e-05, 7e-06, 0.00024, 6e-06,
]
# per tensor: the group after which its gradient leaves (-1: after every group)
RELEASE_GROUP = [
    57, 19, 47, 49, 52, 43, 59, 54,
]
COMPUTE_S = 0.007489735152403032
# the model's inter-op threads: at most this many groups wait at once
COMPUTE_THREADS = 1


def build(batch_size: int):
    return build_graph_twin_probe_loss(TENSOR_BYTES, GATES, GROUP_INPUTS, GROUP_COMPUTE_S,
                                       RELEASE_GROUP, COMPUTE_THREADS)
