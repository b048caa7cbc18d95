"""TensorFlow link probe of the step of widedeep: 8 tensors, 442,372 B each way,
0.1 ms of compute in 60 groups of the model's ops, in its graph's shape. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_graph_twin_probe_loss

TENSOR_BYTES = [
    1024, 275456, 4, 512, 512, 131072, 32768, 1024,
]
# per tensor: the groups that wait for it; per group: the groups it waits for, and its compute
GATES = [
    [26], [26, 55], [29], [29, 45], [27], [27, 50], [24], [28],
]
GROUP_INPUTS = [
    [], [], [], [], [], [], [], [],
    [], [], [], [], [], [], [], [],
    [], [], [], [], [6, 15, 18], [5, 20], [3, 7, 10], [13, 22],
    [9, 20], [0, 12, 24], [25], [26], [0, 20], [27, 28], [1, 29], [1, 2, 30],
    [29], [29, 30, 32], [17, 33], [2, 34], [33, 35], [1, 30, 36], [1, 30, 36], [37, 38],
    [23, 31, 37, 39], [16, 40], [4, 41], [19, 42], [40], [40], [27, 40], [45, 46],
    [27, 45, 46], [48], [48], [26, 48], [50, 51], [26, 50, 51], [53], [53],
    [25, 53], [55, 56], [8, 9, 55, 56], [14, 58],
]
GROUP_COMPUTE_S = [
    1e-06, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    1e-06, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 4e-06, 0.0, 1e-06, 0.0,
    3e-06, 2e-06, 7e-06, 3e-06, 1e-06, 1e-06,
    1e-06, 1e-06, 0.0, 1e-06, 1e-06, 0.0,
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    1e-06, 0.0, 6e-06, 1e-06, 0.0, 0.0,
    3e-06, 1e-06, 3e-06, 4e-06, 1e-06, 6e-06,
    2e-06, 9e-06, 3e-06, 0.0, 9e-06, 0.0,
]
# per tensor: the group after which its gradient leaves (-1: after every group)
RELEASE_GROUP = [
    43, 57, 11, 47, 49, 52, 59, 54,
]
COMPUTE_S = 0.008859404693704165
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
