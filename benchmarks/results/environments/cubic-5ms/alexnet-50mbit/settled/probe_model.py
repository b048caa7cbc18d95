"""TensorFlow link probe of the step of alexnet: 21 tensors, 2,313,000 B each way,
41.7 ms of compute in 18 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    221184, 0, 1048576, 0, 256, 331776, 0, 256, 384, 0,
    204800, 40, 0, 10240, 1024, 384, 128, 262144, 221184, 9600,
    1024,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    4, 5, 7, 3, 6, 5, 2, 1, 5, 4,
    1, 7, 7, 7, 7, 4, 0, 7, 6, 0,
    7,
]
RELEASE_AFTER = [
    10, 17, 9, 17, 13, 11, 17, 16, 14, 17,
    16, 13, 17, 7, 13, 15, 17, 8, 12, 17,
    13,
]
STAGE_COMPUTE_S = [
    0.001931, 0.001319, 0.001845, 0.002446, 0.001399, 0.002203,
    0.002553, 0.000152, 0.001, 0.004226, 0.004533, 0.003273,
    0.001095, 0.004899, 0.001157, 0.002519, 0.002775, 0.0,
]
BEFORE_S = 0.00238
COMPUTE_S = 0.011022004713230005


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
