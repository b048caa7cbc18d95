"""TensorFlow link probe of the step of widedeep: 8 tensors, 442,372 B each way,
1.6 ms of compute in 60 groups of the model's ops, in its graph's shape. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_graph_twin_probe_loss

TENSOR_BYTES = [
    275456, 4, 512, 512, 131072, 1024, 32768, 1024,
]
# per tensor: the groups that wait for it; per group: the groups it waits for, and its compute
GATES = [
    [26, 55], [29], [29, 46], [27], [27, 51], [26], [24], [28],
]
GROUP_INPUTS = [
    [], [], [], [], [], [], [], [],
    [], [], [], [], [], [], [], [],
    [], [], [], [], [10, 14, 16], [8, 20], [9, 13, 15], [3, 22],
    [4], [7, 18, 24], [25], [26], [18], [27, 28], [1, 29], [1, 11, 30],
    [29], [29, 30, 32], [0, 33], [11, 34], [33, 35], [1, 30, 36], [1, 30, 36], [37, 38],
    [21, 31, 37, 39], [19, 40], [2, 41], [5, 42], [40], [27, 40], [40], [45, 46],
    [27, 45, 46], [48], [26, 48], [48], [50, 51], [26, 50, 51], [53], [53],
    [25, 53], [55, 56], [4, 12, 55, 56], [17, 58],
]
GROUP_COMPUTE_S = [
    2.8e-05, 4e-06, 8e-06, 3e-06, 3e-06, 3e-06,
    3e-06, 1.6e-05, 3e-06, 3e-06, 3e-06, 3e-06,
    3e-06, 3e-06, 3e-06, 2e-06, 3e-06, 0.000248,
    3e-06, 3e-06, 2.5e-05, 5e-06, 2e-05, 5e-06,
    3.5e-05, 2.4e-05, 0.000111, 6.3e-05, 1.9e-05, 2.7e-05,
    9e-06, 1e-05, 6e-06, 8e-06, 9e-06, 4e-06,
    3e-06, 6e-06, 4e-06, 3e-06, 6e-06, 4e-06,
    1e-05, 4e-06, 6.8e-05, 3.7e-05, 5.8e-05, 7e-06,
    6e-05, 8e-06, 6.7e-05, 3.9e-05, 4e-06, 9.7e-05,
    1.1e-05, 0.000142, 4.8e-05, 1e-05, 0.00016, 5e-06,
]
# per tensor: the group after which its gradient leaves (-1: after every group)
RELEASE_GROUP = [
    57, 6, 47, 49, 52, 43, 59, 54,
]
COMPUTE_S = 0.007238332835536543
# the model's inter-op threads: at most this many groups wait at once
COMPUTE_THREADS = 1


def build(batch_size: int):
    return build_graph_twin_probe_loss(TENSOR_BYTES, GATES, GROUP_INPUTS, GROUP_COMPUTE_S,
                                       RELEASE_GROUP, COMPUTE_THREADS)
