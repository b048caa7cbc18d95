"""TensorFlow link probe of the step of inception: 59 tensors, 603,496 B each way,
53.5 ms of compute in 27 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    192, 15360, 10240, 0, 128, 12800, 0, 115200, 192, 0,
    0, 10240, 0, 32, 40, 128, 0, 0, 0, 0,
    128, 0, 64, 64, 128, 1024, 3456, 2048, 18432, 64,
    0, 0, 2048, 64, 2048, 0, 0, 30720, 51200, 384,
    192, 0, 0, 5120, 9600, 0, 30720, 30720, 0, 256,
    128, 165888, 0, 96, 128, 73728, 10240, 64, 192,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    8, 8, 5, 0, 5, 1, 0, 8, 7, 0,
    0, 5, 2, 1, 9, 3, 0, 2, 2, 0,
    0, 0, 3, 2, 2, 1, 0, 2, 2, 2,
    9, 6, 2, 1, 1, 9, 9, 6, 3, 7,
    6, 10, 12, 3, 9, 11, 7, 6, 16, 4,
    4, 7, 13, 8, 5, 4, 4, 1, 6,
]
RELEASE_AFTER = [
    10, 15, 17, 26, 16, 24, 26, 14, 10, 26,
    26, 18, 26, 24, 12, 17, 26, 26, 26, 26,
    21, 26, 22, 23, 24, 24, 26, 22, 25, 24,
    26, 26, 23, 24, 25, 26, 26, 12, 21, 12,
    12, 26, 26, 21, 12, 26, 13, 14, 26, 19,
    26, 12, 26, 17, 26, 19, 20, 26, 12,
]
STAGE_COMPUTE_S = [
    0.002599, 0.001668, 0.001186, 0.002105, 0.00334, 0.00285,
    0.000667, 0.001714, 0.002311, 0.000861, 0.001416, 0.001947,
    0.000917, 0.002135, 0.000785, 0.002291, 0.001785, 0.001788,
    0.003901, 0.001635, 0.002548, 0.00257, 0.000816, 0.002429,
    0.002422, 0.002298, 0.0,
]
BEFORE_S = 0.002478
COMPUTE_S = 0.01466636080701339


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
