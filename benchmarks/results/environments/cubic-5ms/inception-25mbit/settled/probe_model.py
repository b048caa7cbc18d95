"""TensorFlow link probe of the step of inception: 59 tensors, 603,496 B each way,
53.9 ms of compute in 29 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    10240, 73728, 9600, 384, 192, 0, 0, 0, 165888, 64,
    128, 0, 192, 0, 30720, 51200, 0, 0, 0, 64,
    128, 30720, 0, 2048, 0, 256, 5120, 0, 0, 64,
    128, 10240, 10240, 2048, 0, 0, 0, 128, 18432, 64,
    0, 2048, 128, 64, 32, 12800, 0, 1024, 3456, 0,
    96, 192, 15360, 128, 115200, 192, 40, 0, 30720,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    7, 5, 10, 8, 9, 0, 0, 0, 8, 2,
    4, 0, 9, 0, 9, 4, 0, 6, 0, 4,
    6, 9, 4, 2, 1, 5, 4, 4, 4, 3,
    5, 6, 5, 3, 7, 4, 1, 2, 2, 2,
    7, 2, 1, 3, 3, 3, 1, 3, 1, 8,
    9, 9, 9, 7, 9, 8, 10, 8, 8,
]
RELEASE_AFTER = [
    17, 20, 10, 13, 11, 28, 28, 28, 14, 24,
    17, 28, 12, 28, 11, 22, 28, 28, 28, 25,
    18, 12, 28, 24, 28, 21, 23, 28, 28, 26,
    21, 18, 21, 25, 28, 28, 28, 28, 27, 28,
    28, 27, 28, 28, 27, 26, 28, 26, 28, 28,
    17, 16, 15, 28, 14, 19, 16, 28, 15,
]
STAGE_COMPUTE_S = [
    0.000982, 0.002182, 0.000742, 0.002051, 0.001202, 0.00279,
    0.001093, 0.002547, 0.001885, 0.001533, 0.002547, 0.00139,
    0.000416, 0.002808, 0.001335, 0.002042, 0.002647, 0.001754,
    0.002023, 0.002395, 0.001746, 0.003783, 0.001236, 0.002454,
    0.000871, 0.002179, 0.001369, 0.002116, 0.0,
]
BEFORE_S = 0.001798
COMPUTE_S = 0.012772965916102996


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
