"""TensorFlow link probe of the step of widedeep: 8 tensors, 442,372 B each way,
1.7 ms of compute in 60 groups of the model's ops, in its graph's shape. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_graph_twin_probe_loss

TENSOR_BYTES = [
    1024, 275456, 4, 512, 512, 131072, 32768, 1024,
]
# per tensor: the groups that wait for it; per group: the groups it waits for, and its compute
GATES = [
    [26], [26, 55], [29], [29, 46], [27], [27, 50], [24], [28],
]
GROUP_INPUTS = [
    [], [], [], [], [], [], [], [],
    [], [], [], [], [], [], [], [],
    [], [], [], [], [10, 16, 18], [19, 20], [1, 4, 12], [14, 22],
    [11, 22], [6, 15, 24], [25], [26], [6, 22], [27, 28], [8, 29], [0, 8, 30],
    [29], [29, 30, 32], [17, 33], [0, 34], [33, 35], [8, 30, 36], [8, 30, 36], [37, 38],
    [21, 31, 37, 39], [2, 40], [13, 41], [9, 42], [40], [27, 40], [40], [45, 46],
    [27, 45, 46], [48], [48], [26, 48], [50, 51], [26, 50, 51], [53], [53],
    [25, 53], [55, 56], [5, 11, 55, 56], [7, 58],
]
GROUP_COMPUTE_S = [
    4.5e-05, 4e-06, 3e-06, 3e-06, 1.4e-05, 2e-06,
    4e-06, 2.5e-05, 3e-06, 3e-06, 2e-06, 3e-06,
    3e-06, 3e-06, 3e-06, 3.5e-05, 3e-06, 2e-06,
    3e-06, 3e-06, 4.2e-05, 6e-06, 8e-06, 5e-06,
    4e-05, 1.9e-05, 0.000155, 5.3e-05, 0.0, 1.7e-05,
    8e-06, 1.1e-05, 5e-06, 1.5e-05, 9e-06, 3e-06,
    2e-06, 5e-06, 3e-06, 2e-06, 6e-06, 4e-06,
    1.3e-05, 3e-06, 0.00015, 1.4e-05, 1.6e-05, 4e-06,
    0.00013, 1e-05, 7.3e-05, 5.3e-05, 7e-06, 0.000151,
    1.1e-05, 0.000198, 7.1e-05, 6e-06, 0.000192, 6e-06,
]
# per tensor: the group after which its gradient leaves (-1: after every group)
RELEASE_GROUP = [
    43, 57, 3, 47, 49, 52, 59, 54,
]
COMPUTE_S = 0.0074345236203733345
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
