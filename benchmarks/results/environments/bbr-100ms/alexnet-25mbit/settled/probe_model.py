"""TensorFlow link probe of the step of alexnet: 21 tensors, 2,313,000 B each way,
38.8 ms of compute in 14 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    40, 221184, 331776, 128, 10240, 0, 0, 384, 221184, 0,
    0, 256, 0, 1024, 9600, 262144, 256, 1024, 384, 1048576,
    204800,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    6, 5, 3, 0, 6, 1, 1, 3, 2, 4,
    0, 5, 1, 6, 0, 6, 1, 6, 2, 6,
    1,
]
RELEASE_AFTER = [
    11, 8, 9, 13, 6, 13, 13, 13, 10, 13,
    13, 11, 13, 11, 13, 7, 13, 11, 13, 11,
    12,
]
STAGE_COMPUTE_S = [
    0.002343, 0.004465, 0.001534, 0.00121, 0.00095, 0.001986,
    0.000346, 0.004081, 0.004649, 0.003241, 0.008099, 0.00196,
    0.002804, 0.0,
]
BEFORE_S = 0.001182
COMPUTE_S = 0.011350987564484605


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
