"""TensorFlow link probe of the step of inception: 59 tensors, 603,496 B each way,
41.9 ms of compute in 30 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    0, 15360, 40, 192, 0, 192, 0, 64, 0, 12800,
    0, 128, 30720, 0, 32, 2048, 128, 1024, 3456, 18432,
    64, 0, 0, 2048, 64, 30720, 384, 192, 128, 0,
    165888, 30720, 51200, 0, 0, 0, 0, 64, 192, 0,
    128, 256, 5120, 115200, 0, 73728, 128, 96, 10240, 0,
    10240, 2048, 0, 128, 64, 10240, 0, 0, 9600,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    0, 8, 9, 9, 0, 7, 3, 1, 0, 1,
    3, 0, 7, 2, 1, 2, 2, 1, 0, 2,
    2, 6, 3, 2, 2, 9, 7, 9, 4, 6,
    7, 9, 4, 11, 9, 9, 9, 4, 8, 13,
    6, 5, 4, 8, 13, 5, 5, 8, 6, 16,
    5, 3, 16, 3, 3, 3, 17, 18, 9,
]
RELEASE_AFTER = [
    29, 16, 17, 11, 29, 12, 29, 24, 29, 26,
    29, 19, 11, 29, 28, 25, 19, 27, 29, 27,
    25, 29, 29, 25, 25, 14, 14, 14, 20, 29,
    14, 15, 22, 29, 29, 29, 29, 26, 17, 29,
    24, 20, 23, 15, 29, 20, 28, 18, 18, 29,
    21, 27, 29, 29, 28, 22, 29, 29, 10,
]
STAGE_COMPUTE_S = [
    0.001473, 0.001189, 0.000979, 0.000321, 0.001392, 0.00275,
    0.0012, 0.001227, 0.001749, 0.000159, 0.001946, 0.000247,
    0.001946, 0.001074, 0.002165, 0.000761, 0.001704, 0.001309,
    0.000949, 0.003933, 0.000946, 0.002127, 0.000326, 0.000279,
    0.001422, 0.001091, 0.00077, 0.00043, 0.001309, 0.0,
]
BEFORE_S = 0.00472
COMPUTE_S = 0.012203552144382762


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
