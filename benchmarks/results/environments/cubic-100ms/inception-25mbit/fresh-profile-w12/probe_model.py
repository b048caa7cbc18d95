"""TensorFlow link probe of the step of inception: 59 tensors, 603,496 B each way,
154.6 ms of compute in 28 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    64, 64, 0, 2048, 0, 2048, 0, 128, 64, 0,
    10240, 12800, 32, 3456, 9600, 115200, 96, 128, 0, 0,
    0, 15360, 10240, 0, 40, 192, 384, 192, 0, 0,
    30720, 165888, 30720, 128, 64, 192, 0, 0, 0, 192,
    51200, 5120, 0, 30720, 0, 128, 1024, 0, 0, 256,
    10240, 0, 64, 73728, 128, 0, 128, 2048, 18432,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    2, 1, 0, 2, 0, 2, 0, 0, 1, 1,
    5, 1, 1, 0, 7, 6, 5, 2, 10, 7,
    8, 5, 2, 9, 7, 5, 6, 6, 9, 9,
    5, 6, 6, 3, 3, 6, 9, 9, 10, 5,
    3, 3, 11, 5, 14, 4, 1, 16, 17, 4,
    4, 22, 2, 4, 5, 23, 2, 1, 2,
]
RELEASE_AFTER = [
    18, 21, 27, 21, 27, 24, 27, 13, 21, 27,
    15, 23, 23, 27, 7, 10, 11, 14, 27, 27,
    27, 11, 19, 27, 7, 7, 7, 7, 27, 27,
    9, 9, 10, 18, 24, 7, 27, 27, 27, 9,
    17, 18, 27, 12, 27, 19, 23, 27, 27, 15,
    20, 27, 26, 18, 25, 27, 27, 25, 25,
]
STAGE_COMPUTE_S = [
    0.007539, 0.005349, 0.001225, 0.004255, 0.007789, 0.002733,
    0.004099, 3e-05, 0.007387, 0.009055, 0.003929, 0.002484,
    0.009, 0.001599, 0.005967, 0.003071, 0.018215, 0.004025,
    0.002808, 0.007031, 0.005417, 0.0049, 0.01149, 0.000362,
    0.007227, 0.007999, 0.005583, 0.0,
]
BEFORE_S = 0.00401
COMPUTE_S = 0.021480708758134348


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
