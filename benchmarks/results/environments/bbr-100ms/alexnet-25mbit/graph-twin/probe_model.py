"""TensorFlow link probe of the step of alexnet: 21 tensors, 2,313,000 B each way,
54.1 ms of compute in 82 groups of the model's ops, in its graph's shape. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_graph_twin_probe_loss

TENSOR_BYTES = [
    0, 1024, 1048576, 40, 221184, 221184, 10240, 256, 0, 1024,
    0, 256, 262144, 384, 384, 331776, 204800, 0, 0, 128,
    9600,
]
# per tensor: the groups that wait for it; per group: the groups it waits for, and its compute
GATES = [
    [9], [36], [36, 53], [38], [33, 59], [25, 69], [38, 43], [33],
    [11], [37], [12], [19], [37, 48], [26], [25], [26, 64],
    [19, 75], [20], [13], [14], [14],
]
GROUP_INPUTS = [
    [], [], [], [], [], [], [], [],
    [0, 1, 3], [], [], [], [], [], [5], [14],
    [13, 15], [], [], [15], [], [19], [11, 21], [],
    [], [21], [25], [20, 25], [], [], [12, 26], [],
    [], [26], [33], [6, 34], [35], [36], [37], [8, 38],
    [4, 39], [40], [37, 40], [40], [42, 43], [37, 42, 43], [45], [36, 45],
    [45], [47, 48], [36, 47, 48], [50], [35, 50], [50], [2, 52, 53], [52, 53],
    [33, 34, 54], [33, 56], [57], [32, 57], [26, 31, 57], [59, 60], [26, 59, 60], [62],
    [29, 62], [25, 28, 62], [64, 65], [25, 64, 65], [67], [24, 67], [21, 23, 67], [69, 70],
    [19, 21, 69], [19, 72], [73], [18, 73], [15, 17, 73], [75, 76], [14, 15, 75], [14, 78],
    [79], [5, 10, 79],
]
GROUP_COMPUTE_S = [
    2.2e-05, 5e-06, 4e-06, 3e-06, 4e-06, 0.000556,
    4e-06, 4e-06, 1.6e-05, 0.000325, 6e-06, 5.3e-05,
    1.8e-05, 2.1e-05, 0.001903, 0.000212, 4e-06, 5e-06,
    2e-06, 0.007114, 0.0, 0.000163, 4e-06, 5e-06,
    2e-06, 0.002147, 0.003131, 0.0, 0.0, 0.0,
    7e-06, 5e-06, 2e-06, 0.001965, 5.8e-05, 1e-05,
    0.000282, 7.8e-05, 2.2e-05, 3.2e-05, 2.5e-05, 1.7e-05,
    1.8e-05, 1.8e-05, 5e-06, 0.000201, 3.8e-05, 7.5e-05,
    7.8e-05, 5e-06, 0.000187, 1e-05, 0.000318, 0.000276,
    7e-06, 4e-06, 0.000556, 3e-05, 2e-05, 0.002171,
    0.002312, 8e-06, 0.000209, 2.6e-05, 0.003105, 0.003316,
    1.2e-05, 0.000326, 2.8e-05, 0.002045, 0.002238, 8e-06,
    0.000349, 0.00016, 5.2e-05, 0.007023, 0.007639, 2.7e-05,
    0.00066, 0.000266, 0.000151, 0.001852,
]
# per tensor: the group after which its gradient leaves (-1: after every group)
RELEASE_GROUP = [
    -1, 51, 55, 41, 61, 71, 44, 58, -1, 46,
    -1, 74, 49, 63, 68, 66, 77, -1, -1, 80,
    81,
]
COMPUTE_S = 0.011230598988501983
# the model's inter-op threads: at most this many groups wait at once
COMPUTE_THREADS = 1


def build(batch_size: int):
    return build_graph_twin_probe_loss(TENSOR_BYTES, GATES, GROUP_INPUTS, GROUP_COMPUTE_S,
                                       RELEASE_GROUP, COMPUTE_THREADS)
