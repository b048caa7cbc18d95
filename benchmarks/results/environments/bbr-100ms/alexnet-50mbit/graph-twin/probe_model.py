"""TensorFlow link probe of the step of alexnet: 21 tensors, 2,313,000 B each way,
50.1 ms of compute in 82 groups of the model's ops, in its graph's shape. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_graph_twin_probe_loss

TENSOR_BYTES = [
    0, 262144, 384, 128, 1024, 221184, 0, 1048576, 0, 256,
    9600, 221184, 384, 0, 40, 256, 10240, 331776, 204800, 1024,
    0,
]
# per tensor: the groups that wait for it; per group: the groups it waits for, and its compute
GATES = [
    [9], [30, 41], [20], [12], [28], [20, 70], [10], [28, 46],
    [18], [22], [12], [22, 54], [21], [29], [31], [17],
    [31, 36], [21, 64], [17, 75], [30], [52],
]
GROUP_INPUTS = [
    [], [], [], [], [], [], [], [],
    [1, 3, 5], [], [], [], [2], [12], [9, 13], [],
    [], [13], [], [17], [19], [20], [21], [18, 21],
    [], [], [22], [7, 26], [27], [], [28], [30],
    [8, 31], [4, 32], [33], [30, 33], [33], [35, 36], [30, 35, 36], [38],
    [28, 38], [38], [40, 41], [28, 40, 41], [43], [27, 43], [43], [6, 45, 46],
    [45, 46], [22, 26, 47], [22, 49], [50], [], [21, 24, 50], [25, 50], [19, 29],
    [], [], [20, 52], [], [], [53, 54], [21, 53, 54], [62],
    [60, 62], [20, 59, 62], [64, 65], [20, 64, 65], [67], [19, 56, 67], [57, 67], [69, 70],
    [17, 19, 70], [17, 72], [73], [16, 73], [13, 15, 73], [75, 76], [12, 13, 75], [12, 78],
    [79], [2, 11, 79],
]
GROUP_COMPUTE_S = [
    0.000711, 3e-06, 0.000473, 3e-06, 3e-06, 2e-06,
    3e-06, 2e-06, 2.3e-05, 7.6e-05, 0.000135, 4e-06,
    0.00185, 0.000255, 4e-06, 4e-06, 3e-06, 0.007126,
    0.0, 0.000199, 0.002121, 0.003453, 0.001966, 0.0,
    0.0, 0.0, 5.4e-05, 1e-05, 0.000277, 0.0,
    7.7e-05, 2.1e-05, 3.3e-05, 2.6e-05, 1.2e-05, 1.8e-05,
    2e-05, 5e-06, 0.000206, 7e-06, 6.6e-05, 7.2e-05,
    5e-06, 0.000137, 7e-06, 0.000282, 0.000257, 7e-06,
    4e-06, 0.000338, 3e-05, 4.5e-05, 6.3e-05, 0.002338,
    0.001272, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 8e-06, 0.000192, 3.5e-05, 0.003086, 0.002001,
    1e-05, 0.00028, 2.7e-05, 0.002237, 0.000288, 8e-06,
    0.000288, 0.000149, 4.6e-05, 0.007061, 0.007608, 2.4e-05,
    0.000539, 0.000279, 0.000145, 0.001716,
]
# per tensor: the group after which its gradient leaves (-1: after every group)
RELEASE_GROUP = [
    -1, 42, 63, 80, 44, 61, -1, 48, -1, 51,
    81, 71, 68, -1, 34, 74, 37, 66, 77, 39,
    -1,
]
COMPUTE_S = 0.011504320008255187
# the model's inter-op threads: at most this many groups wait at once
COMPUTE_THREADS = 1


def build(batch_size: int):
    return build_graph_twin_probe_loss(TENSOR_BYTES, GATES, GROUP_INPUTS, GROUP_COMPUTE_S,
                                       RELEASE_GROUP, COMPUTE_THREADS)
