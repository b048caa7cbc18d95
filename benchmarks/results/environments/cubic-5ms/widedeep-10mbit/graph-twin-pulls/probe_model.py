"""TensorFlow link probe of the step of widedeep: 8 tensors, 442,372 B each way,
0.4 ms of compute in 60 groups of the model's ops, in its graph's shape. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_graph_twin_probe_loss

TENSOR_BYTES = [
    275456, 4, 512, 512, 131072, 1024, 32768, 1024,
]
# per tensor: the groups that wait for it; per group: the groups it waits for, and its compute
GATES = [
    [26, 55], [29], [29, 45], [28], [28, 50], [26], [24], [27],
]
GROUP_INPUTS = [
    [], [], [], [], [], [], [], [],
    [], [], [], [], [], [], [], [],
    [], [], [], [], [6, 17, 19], [1, 20], [0, 7, 16], [15, 22],
    [4, 22], [10, 13, 24], [25], [10, 22], [26], [27, 28], [14, 29], [14, 18, 30],
    [29], [29, 30, 32], [9, 33], [18, 34], [33, 35], [14, 30, 36], [14, 30, 36], [37, 38],
    [21, 31, 37, 39], [5, 40], [2, 41], [11, 42], [40], [40], [28, 40], [45, 46],
    [28, 45, 46], [48], [48], [26, 48], [50, 51], [26, 50, 51], [53], [53],
    [25, 53], [55, 56], [4, 8, 55, 56], [12, 58],
]
GROUP_COMPUTE_S = [
    1.7e-05, 1e-06, 1e-06, 1e-06, 1e-06, 0.0,
    1e-06, 0.0, 0.0, 1e-06, 0.0, 0.0,
    0.0, 5e-06, 1e-06, 0.0, 1e-06, 0.0,
    0.0, 0.0, 9e-06, 1e-06, 5e-06, 1e-06,
    8e-06, 4e-06, 3.1e-05, 2e-06, 8e-06, 5e-06,
    2e-06, 3e-06, 1e-06, 2e-06, 2e-06, 1e-06,
    1e-06, 1e-06, 1e-06, 0.0, 1e-06, 1e-06,
    3e-06, 1e-06, 3e-05, 1.7e-05, 2e-06, 1e-06,
    3.7e-05, 4e-06, 1.3e-05, 1.1e-05, 1e-06, 4.8e-05,
    4e-06, 3.2e-05, 1.5e-05, 1e-06, 5.7e-05, 1e-06,
]
# per tensor: the group after which its gradient leaves (-1: after every group)
RELEASE_GROUP = [
    57, 3, 47, 49, 52, 43, 59, 54,
]
COMPUTE_S = 0.007040455257255718
# the model's inter-op threads: at most this many groups wait at once
COMPUTE_THREADS = 1
# per worker tensor the PS takes before it sends some: its size and the group after which
# it is made (-1: at the step's start); per tensor: the worker tensors it waits for
PULL_BYTES = [
    2048,
]
PULL_GROUP = [
    22,
]
PULLED_BY = [
    [], [], [], [], [], [], [0], [0],
]


def build(batch_size: int):
    return build_graph_twin_probe_loss(TENSOR_BYTES, GATES, GROUP_INPUTS, GROUP_COMPUTE_S,
                                       RELEASE_GROUP, COMPUTE_THREADS,
                                       PULL_BYTES, PULL_GROUP, PULLED_BY)
