"""TensorFlow link probe of the step of widedeep: 8 tensors, 442,372 B each way,
2.9 ms of compute in 60 groups of the model's ops, in its graph's shape. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_graph_twin_probe_loss

TENSOR_BYTES = [
    4, 275456, 512, 512, 1024, 131072, 32768, 1024,
]
# per tensor: the groups that wait for it; per group: the groups it waits for, and its compute
GATES = [
    [29], [27, 55], [29, 45], [28], [24], [28, 50], [25], [27],
]
GROUP_INPUTS = [
    [], [], [], [], [], [], [], [],
    [], [], [], [], [], [], [], [],
    [], [], [], [], [0, 3, 18], [13, 20], [12, 14, 16], [4, 22],
    [6, 20], [2, 20], [6, 11, 25], [26], [27], [24, 28], [9, 29], [8, 9, 30],
    [29], [29, 30, 32], [5, 33], [8, 34], [33, 35], [9, 30, 36], [9, 30, 36], [37, 38],
    [23, 31, 37, 39], [7, 40], [10, 41], [19, 42], [40], [40], [28, 40], [45, 46],
    [28, 45, 46], [48], [48], [27, 48], [50, 51], [27, 50, 51], [53], [53],
    [26, 53], [55, 56], [1, 2, 55, 56], [17, 58],
]
GROUP_COMPUTE_S = [
    0.000443, 3e-06, 3.7e-05, 3e-06, 4e-06, 4e-06,
    3e-06, 3e-06, 4e-06, 2e-06, 3e-06, 0.000107,
    3e-06, 3e-06, 3e-06, 2e-06, 3e-06, 2e-06,
    3e-06, 3e-06, 4.1e-05, 7e-06, 0.000185, 7e-06,
    0.000187, 5.7e-05, 2.2e-05, 0.000165, 5.1e-05, 2.2e-05,
    1e-05, 1.4e-05, 6e-06, 9e-06, 1.1e-05, 4e-06,
    3e-06, 6e-06, 3e-06, 3e-06, 7e-06, 4e-06,
    1.7e-05, 3e-06, 0.000189, 2.2e-05, 8e-06, 6e-06,
    0.000148, 8e-06, 4.9e-05, 6.7e-05, 7e-06, 0.000275,
    1.5e-05, 0.000138, 8.6e-05, 7e-06, 0.000423, 6e-06,
]
# per tensor: the group after which its gradient leaves (-1: after every group)
RELEASE_GROUP = [
    15, 57, 47, 49, 43, 52, 59, 54,
]
COMPUTE_S = 0.00929466387789013
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
    [], [], [], [], [0], [], [0], [],
]


def build(batch_size: int):
    return build_graph_twin_probe_loss(TENSOR_BYTES, GATES, GROUP_INPUTS, GROUP_COMPUTE_S,
                                       RELEASE_GROUP, COMPUTE_THREADS,
                                       PULL_BYTES, PULL_GROUP, PULLED_BY)
