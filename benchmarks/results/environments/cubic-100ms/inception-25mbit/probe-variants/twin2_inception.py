"""TensorFlow link probe of the step of inception: 59 tensors, 603,496 B each way,
48.2 ms of compute in 27 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    384, 192, 128, 0, 10240, 0, 0, 0, 165888, 30720,
    51200, 0, 128, 0, 192, 0, 64, 10240, 0, 64,
    30720, 256, 5120, 64, 128, 2048, 192, 128, 0, 18432,
    1024, 2048, 12800, 64, 0, 0, 2048, 64, 0, 128,
    0, 32, 3456, 0, 192, 0, 128, 115200, 96, 10240,
    73728, 0, 40, 0, 15360, 0, 0, 30720, 9600,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    8, 8, 4, 0, 5, 0, 0, 0, 8, 8,
    4, 1, 7, 1, 8, 1, 4, 7, 1, 3,
    8, 5, 4, 2, 3, 3, 10, 5, 6, 3,
    2, 2, 2, 2, 1, 1, 2, 2, 3, 1,
    3, 2, 1, 11, 9, 9, 4, 9, 9, 4,
    5, 9, 10, 6, 9, 6, 11, 10, 10,
]
RELEASE_AFTER = [
    13, 11, 16, 26, 16, 26, 26, 26, 13, 11,
    21, 26, 17, 26, 12, 26, 22, 18, 26, 23,
    12, 20, 21, 24, 20, 22, 15, 25, 26, 25,
    24, 23, 24, 25, 26, 26, 25, 26, 26, 26,
    26, 24, 26, 26, 16, 26, 26, 14, 20, 20,
    19, 26, 15, 26, 15, 26, 26, 14, 10,
]
STAGE_COMPUTE_S = [
    0.000622, 0.002229, 0.001133, 0.001278, 0.001727, 0.001227,
    0.000735, 0.002096, 0.001499, 0.001896, 0.002219, 0.001007,
    0.002546, 0.001815, 0.000732, 0.00404, 0.000424, 0.002117,
    0.002349, 0.001683, 0.003868, 0.002165, 0.000788, 0.002249,
    0.002436, 0.00177, 0.0,
]
BEFORE_S = 0.001592
COMPUTE_S = 0.012468838526351722


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
