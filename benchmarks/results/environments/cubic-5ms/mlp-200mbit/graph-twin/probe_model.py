"""TensorFlow link probe of the step of mlp: 8 tensors, 9,533,480 B each way,
9.0 ms of compute in 30 groups of the model's ops, in its graph's shape. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_graph_twin_probe_loss

TENSOR_BYTES = [
    20480, 2048, 2097152, 4096, 40, 4194304, 4096, 3211264,
]
# per tensor: the groups that wait for it; per group: the groups it waits for, and its compute
GATES = [
    [10, 15], [9], [9, 19], [8], [10], [8, 24], [7], [7],
]
GROUP_INPUTS = [
    [], [], [], [], [], [], [1, 2, 4], [0],
    [7], [8], [9], [6, 10], [5, 11], [12], [9, 12], [12],
    [14, 15], [9, 14, 15], [17], [17], [8, 17], [19, 20], [8, 19, 20], [22],
    [22], [7, 22], [24, 25], [7, 24, 25], [27], [0, 27],
]
GROUP_COMPUTE_S = [
    0.00041, 6e-06, 4e-06, 3e-06, 5e-06, 4e-06,
    4.2e-05, 0.000945, 0.001072, 0.000509, 5.6e-05, 3.8e-05,
    2.3e-05, 1.4e-05, 2.6e-05, 3.5e-05, 7e-06, 0.000197,
    1.6e-05, 0.000645, 0.000381, 1.5e-05, 0.000662, 2.5e-05,
    0.00131, 0.000904, 9.5e-05, 0.000857, 3.4e-05, 0.000689,
]
# per tensor: the group after which its gradient leaves (-1: after every group)
RELEASE_GROUP = [
    16, 18, 21, 28, 13, 26, 23, 29,
]
COMPUTE_S = 0.013929342418416035
# the model's inter-op threads: at most this many groups wait at once
COMPUTE_THREADS = 1


def build(batch_size: int):
    return build_graph_twin_probe_loss(TENSOR_BYTES, GATES, GROUP_INPUTS, GROUP_COMPUTE_S,
                                       RELEASE_GROUP, COMPUTE_THREADS)
