"""TensorFlow link probe of the step of inception: 59 tensors, 603,496 B each way,
55.1 ms of compute in 27 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    2048, 0, 0, 192, 0, 0, 40, 115200, 96, 128,
    73728, 9600, 0, 15360, 10240, 0, 0, 384, 192, 0,
    0, 192, 165888, 30720, 128, 0, 128, 0, 192, 51200,
    64, 10240, 30720, 0, 5120, 64, 256, 128, 2048, 10240,
    0, 0, 30720, 0, 0, 64, 64, 18432, 2048, 12800,
    0, 128, 0, 32, 3456, 1024, 0, 128, 64,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    2, 0, 0, 8, 0, 0, 10, 8, 8, 5,
    4, 10, 0, 8, 5, 0, 0, 9, 9, 1,
    1, 8, 9, 9, 6, 1, 5, 1, 10, 6,
    6, 5, 10, 5, 6, 3, 4, 4, 3, 4,
    1, 6, 8, 6, 7, 3, 2, 2, 3, 2,
    1, 1, 7, 2, 1, 2, 13, 2, 2,
]
RELEASE_AFTER = [
    21, 26, 26, 11, 26, 26, 23, 15, 23, 16,
    18, 10, 26, 15, 16, 26, 26, 14, 12, 26,
    26, 14, 13, 11, 17, 26, 20, 26, 23, 19,
    21, 17, 12, 26, 20, 22, 18, 23, 22, 19,
    26, 26, 13, 26, 26, 23, 23, 24, 24, 23,
    26, 25, 26, 24, 26, 24, 26, 26, 25,
]
STAGE_COMPUTE_S = [
    0.000535, 0.002648, 0.001167, 0.001247, 0.003239, 0.001757,
    0.000499, 0.002707, 0.001191, 0.002254, 0.001849, 0.001174,
    0.003817, 0.000208, 0.002947, 0.005267, 0.00179, 0.00483,
    0.002237, 0.00184, 0.00215, 0.001569, 0.00083, 0.001653,
    0.001585, 0.00093, 0.0,
]
BEFORE_S = 0.003193
COMPUTE_S = 0.01395089570675298


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
