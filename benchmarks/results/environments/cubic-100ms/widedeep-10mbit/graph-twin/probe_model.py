"""TensorFlow link probe of the step of widedeep: 8 tensors, 442,372 B each way,
2.2 ms of compute in 60 groups of the model's ops, in its graph's shape. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_graph_twin_probe_loss

TENSOR_BYTES = [
    4, 512, 512, 131072, 275456, 1024, 32768, 1024,
]
# per tensor: the groups that wait for it; per group: the groups it waits for, and its compute
GATES = [
    [29], [29, 45], [28], [28, 50], [26, 55], [26], [24], [27],
]
GROUP_INPUTS = [
    [], [], [], [], [], [], [], [],
    [], [], [], [], [], [], [], [],
    [], [], [], [], [12, 17, 19], [6, 20], [2, 9, 14], [15, 22],
    [8, 20], [1, 5, 24], [25], [5, 20], [26], [27, 28], [7, 29], [7, 11, 30],
    [29], [29, 30, 32], [18, 33], [11, 34], [33, 35], [7, 30, 36], [7, 30, 36], [37, 38],
    [23, 31, 37, 39], [3, 40], [4, 41], [13, 42], [40], [40], [28, 40], [45, 46],
    [28, 45, 46], [48], [48], [26, 48], [50, 51], [26, 50, 51], [53], [53],
    [25, 53], [55, 56], [0, 8, 55, 56], [10, 58],
]
GROUP_COMPUTE_S = [
    0.000359, 1.7e-05, 6e-06, 4e-06, 4e-06, 4e-06,
    4e-06, 4e-06, 5e-06, 4e-06, 4e-06, 5e-06,
    2e-06, 4e-06, 4e-06, 5e-06, 4e-06, 4e-06,
    3e-06, 3e-06, 5.1e-05, 7e-06, 2.6e-05, 7e-06,
    4.1e-05, 3.2e-05, 0.000142, 0.0, 7e-05, 2.7e-05,
    1.4e-05, 1.3e-05, 8e-06, 1.2e-05, 1.4e-05, 6e-06,
    5e-06, 1.3e-05, 6e-06, 4e-06, 8e-06, 6e-06,
    1.5e-05, 5e-06, 0.000158, 4e-05, 1.1e-05, 6e-06,
    0.000106, 1.1e-05, 6.8e-05, 5e-05, 1.1e-05, 0.000182,
    1.6e-05, 0.000188, 7.9e-05, 1e-05, 0.000314, 9e-06,
]
# per tensor: the group after which its gradient leaves (-1: after every group)
RELEASE_GROUP = [
    16, 47, 49, 52, 57, 43, 59, 54,
]
COMPUTE_S = 0.007399825984208408
# the model's inter-op threads: at most this many groups wait at once
COMPUTE_THREADS = 1
# per worker tensor the PS takes before it sends some: its size and the group after which
# it is made (-1: at the step's start); per tensor: the worker tensors it waits for
PULL_BYTES = [
    2048,
]
PULL_GROUP = [
    20,
]
PULLED_BY = [
    [], [], [], [], [], [], [0], [0],
]


def build(batch_size: int):
    return build_graph_twin_probe_loss(TENSOR_BYTES, GATES, GROUP_INPUTS, GROUP_COMPUTE_S,
                                       RELEASE_GROUP, COMPUTE_THREADS,
                                       PULL_BYTES, PULL_GROUP, PULLED_BY)
