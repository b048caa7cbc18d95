"""TensorFlow link probe of the step of alexnet: 21 tensors, 2,313,000 B each way,
38.8 ms of compute in 15 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    40, 1048576, 256, 10240, 384, 204800, 1024, 331776, 0, 0,
    262144, 0, 128, 1024, 384, 221184, 0, 9600, 256, 221184,
    0,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    7, 7, 2, 7, 5, 2, 7, 5, 0, 4,
    7, 0, 1, 7, 4, 4, 3, 1, 6, 6,
    5,
]
RELEASE_AFTER = [
    11, 11, 11, 7, 12, 13, 11, 9, 14, 14,
    7, 14, 14, 11, 12, 8, 14, 14, 14, 10,
    14,
]
STAGE_COMPUTE_S = [
    8.6e-05, 0.001869, 0.000897, 0.004114, 0.002159, 0.001401,
    0.002304, 0.004083, 0.004675, 0.003475, 0.00308, 0.001783,
    0.005283, 0.002993, 0.0,
]
BEFORE_S = 0.000616
COMPUTE_S = 0.011604258246519117


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
