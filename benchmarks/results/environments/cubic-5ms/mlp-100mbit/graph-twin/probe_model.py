"""TensorFlow link probe of the step of mlp: 8 tensors, 9,533,480 B each way,
2.4 ms of compute in 30 groups of the model's ops, in its graph's shape. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_graph_twin_probe_loss

TENSOR_BYTES = [
    40, 4194304, 20480, 3211264, 2048, 2097152, 4096, 4096,
]
# per tensor: the groups that wait for it; per group: the groups it waits for, and its compute
GATES = [
    [10], [8, 24], [10, 15], [7], [9], [9, 19], [7], [8],
]
GROUP_INPUTS = [
    [], [], [], [], [], [], [0, 1, 3], [4],
    [7], [8], [9], [6, 10], [5, 11], [12], [9, 12], [12],
    [14, 15], [9, 14, 15], [17], [17], [8, 17], [19, 20], [8, 19, 20], [22],
    [22], [7, 22], [24, 25], [7, 24, 25], [27], [4, 27],
]
GROUP_COMPUTE_S = [
    4.4e-05, 1e-06, 1e-06, 1e-06, 0.000132, 1e-06,
    3e-06, 0.000205, 0.00038, 0.000118, 1.2e-05, 3.8e-05,
    6e-06, 3e-06, 7e-06, 1.1e-05, 2e-06, 3.4e-05,
    4e-06, 0.000136, 0.00011, 3e-06, 0.000185, 5e-06,
    0.000297, 0.000198, 3e-06, 0.000205, 5e-06, 0.000293,
]
# per tensor: the group after which its gradient leaves (-1: after every group)
RELEASE_GROUP = [
    13, 26, 16, 29, 18, 21, 28, 23,
]
COMPUTE_S = 0.014173249688467227
# the model's inter-op threads: at most this many groups wait at once
COMPUTE_THREADS = 1


def build(batch_size: int):
    return build_graph_twin_probe_loss(TENSOR_BYTES, GATES, GROUP_INPUTS, GROUP_COMPUTE_S,
                                       RELEASE_GROUP, COMPUTE_THREADS)
