"""TensorFlow link probe of the step of inception: 59 tensors, 603,496 B each way,
50.0 ms of compute in 29 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    192, 0, 51200, 30720, 0, 192, 0, 165888, 0, 96,
    30720, 256, 5120, 192, 15360, 0, 73728, 128, 1024, 115200,
    192, 128, 0, 10240, 40, 0, 0, 10240, 0, 128,
    9600, 0, 30720, 0, 64, 0, 0, 128, 0, 64,
    384, 128, 64, 64, 2048, 18432, 2048, 10240, 0, 0,
    64, 0, 2048, 128, 12800, 32, 3456, 0, 0,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    9, 0, 4, 9, 0, 11, 0, 9, 3, 10,
    11, 7, 4, 10, 10, 5, 7, 7, 3, 10,
    9, 6, 1, 7, 11, 12, 7, 6, 6, 5,
    11, 3, 9, 5, 3, 8, 1, 4, 5, 2,
    9, 2, 2, 4, 2, 2, 2, 5, 10, 12,
    2, 3, 2, 1, 3, 3, 1, 1, 1,
]
RELEASE_AFTER = [
    11, 28, 22, 11, 28, 12, 28, 13, 28, 22,
    12, 20, 23, 15, 14, 28, 19, 16, 26, 14,
    19, 17, 28, 17, 19, 28, 28, 18, 28, 20,
    10, 28, 14, 28, 24, 28, 28, 24, 28, 24,
    13, 27, 25, 26, 24, 27, 25, 21, 28, 28,
    28, 28, 27, 28, 25, 26, 28, 28, 28,
]
STAGE_COMPUTE_S = [
    0.000367, 0.003114, 0.001595, 0.000586, 0.002474, 0.000619,
    0.002149, 0.001599, 0.002903, 0.001896, 0.00159, 0.001334,
    0.002632, 0.002219, 0.00277, 0.001784, 0.00104, 0.000299,
    0.003769, 0.000788, 0.00137, 0.000799, 0.001392, 0.003135,
    0.001407, 0.000708, 0.001654, 0.002172, 0.0,
]
BEFORE_S = 0.001884
COMPUTE_S = 0.014468995143219643


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
