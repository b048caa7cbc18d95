"""TensorFlow link probe of the step of widedeep: 8 tensors, 442,372 B each way,
1.5 ms of compute in 60 groups of the model's ops, in its graph's shape. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_graph_twin_probe_loss

TENSOR_BYTES = [
    512, 131072, 1024, 275456, 4, 512, 32768, 1024,
]
# per tensor: the groups that wait for it; per group: the groups it waits for, and its compute
GATES = [
    [27], [27, 50], [26], [26, 55], [29], [29, 45], [24], [28],
]
GROUP_INPUTS = [
    [], [], [], [], [], [], [], [],
    [], [], [], [], [], [], [], [],
    [], [], [], [], [10, 17, 19], [12, 20], [11, 14, 18], [5, 22],
    [4], [1, 7, 24], [25], [26], [1], [27, 28], [8, 29], [8, 15, 30],
    [29], [29, 30, 32], [13, 33], [15, 34], [33, 35], [8, 30, 36], [8, 30, 36], [37, 38],
    [23, 31, 37, 39], [16, 40], [2, 41], [3, 42], [40], [40], [27, 40], [45, 46],
    [27, 45, 46], [48], [48], [26, 48], [50, 51], [26, 50, 51], [53], [53],
    [25, 53], [55, 56], [0, 4, 55, 56], [9, 58],
]
GROUP_COMPUTE_S = [
    3e-05, 5e-06, 3e-06, 3e-06, 6e-06, 3e-06,
    2e-06, 1.2e-05, 5e-06, 3e-06, 2e-06, 2e-06,
    4e-06, 2e-06, 3e-06, 3e-06, 3e-06, 3e-06,
    3e-06, 3e-06, 4.3e-05, 6e-06, 2.1e-05, 6e-06,
    4e-05, 2.7e-05, 0.00012, 5.6e-05, 0.0, 2.4e-05,
    1.1e-05, 1.1e-05, 5e-06, 8e-06, 9e-06, 4e-06,
    3e-06, 6e-06, 4e-06, 3e-06, 6e-06, 4e-06,
    1.3e-05, 3e-06, 0.000132, 4.6e-05, 9e-06, 5e-06,
    7.8e-05, 1e-05, 4.1e-05, 4.3e-05, 2.2e-05, 0.000176,
    1.2e-05, 8.8e-05, 4.6e-05, 6e-06, 0.000262, 6e-06,
]
# per tensor: the group after which its gradient leaves (-1: after every group)
RELEASE_GROUP = [
    47, 52, 43, 57, 6, 49, 59, 54,
]
COMPUTE_S = 0.009248738576640936
# the model's inter-op threads: at most this many groups wait at once
COMPUTE_THREADS = 1


def build(batch_size: int):
    return build_graph_twin_probe_loss(TENSOR_BYTES, GATES, GROUP_INPUTS, GROUP_COMPUTE_S,
                                       RELEASE_GROUP, COMPUTE_THREADS)
