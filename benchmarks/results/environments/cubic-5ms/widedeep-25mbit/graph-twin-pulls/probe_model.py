"""TensorFlow link probe of the step of widedeep: 8 tensors, 442,372 B each way,
1.7 ms of compute in 60 groups of the model's ops, in its graph's shape. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_graph_twin_probe_loss

TENSOR_BYTES = [
    512, 131072, 1024, 275456, 4, 512, 32768, 1024,
]
# per tensor: the groups that wait for it; per group: the groups it waits for, and its compute
GATES = [
    [27], [27, 51], [26], [26, 56], [29], [29, 46], [24], [28],
]
GROUP_INPUTS = [
    [], [], [], [], [], [], [], [],
    [], [], [], [], [], [], [], [],
    [], [], [], [], [1, 15, 19], [10, 20], [2, 8, 14], [12, 22],
    [17, 20], [11, 13, 24], [25], [26], [11, 20], [27, 28], [5, 29], [5, 7, 30],
    [29], [29, 30, 32], [4, 33], [7, 34], [33, 35], [5, 30, 36], [5, 30, 36], [37, 38],
    [23, 31, 37, 39], [16, 40], [18, 41], [9, 42], [40], [27, 40], [40], [45, 46],
    [27, 45, 46], [48], [26, 48], [48], [50, 51], [26, 50, 51], [53], [25, 53],
    [53], [55, 56], [3, 17, 55, 56], [6, 58],
]
GROUP_COMPUTE_S = [
    9e-05, 6e-06, 2e-06, 4e-06, 4e-06, 4e-06,
    1e-05, 3e-06, 3e-06, 3e-06, 9e-06, 3e-06,
    3e-06, 1e-05, 7e-06, 3e-06, 3e-06, 3e-06,
    2e-06, 2e-06, 7.8e-05, 7e-06, 1.8e-05, 6e-06,
    6.2e-05, 2.5e-05, 0.000176, 5.6e-05, 4.3e-05, 3.1e-05,
    9e-06, 1.1e-05, 6e-06, 8e-06, 1.1e-05, 5e-06,
    3e-06, 5e-06, 4e-06, 3e-06, 6e-06, 5e-06,
    1.5e-05, 3e-06, 0.000104, 1.4e-05, 1.6e-05, 4e-06,
    8e-05, 8e-06, 5.3e-05, 6.5e-05, 5e-06, 0.000103,
    1e-05, 9.7e-05, 0.000163, 6e-06, 0.000152, 6e-06,
]
# per tensor: the group after which its gradient leaves (-1: after every group)
RELEASE_GROUP = [
    47, 52, 43, 57, 0, 49, 59, 54,
]
COMPUTE_S = 0.009693747676808195
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
