"""TensorFlow link probe of the step of resnet: 47 tensors, 698,792 B each way,
132.6 ms of compute in 22 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    0, 256, 128, 36864, 256, 147456, 36864, 0, 64, 9216,
    40, 147456, 8192, 0, 0, 9216, 64, 2560, 0, 256,
    128, 128, 0, 0, 256, 73728, 36864, 2048, 64, 1728,
    0, 0, 128, 0, 128, 18432, 0, 64, 0, 64,
    9216, 9216, 0, 256, 0, 147456, 0,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    0, 5, 4, 3, 5, 5, 4, 0, 2, 1,
    6, 5, 5, 0, 0, 2, 0, 6, 1, 5,
    4, 3, 0, 2, 5, 5, 4, 3, 2, 0,
    6, 6, 3, 7, 3, 3, 9, 1, 8, 1,
    1, 2, 6, 6, 8, 6, 9,
]
RELEASE_AFTER = [
    21, 6, 17, 11, 9, 7, 12, 21, 19, 15,
    6, 8, 9, 21, 21, 16, 20, 6, 21, 9,
    19, 19, 21, 21, 9, 10, 13, 12, 20, 21,
    21, 21, 19, 21, 21, 14, 21, 21, 21, 21,
    18, 21, 21, 21, 21, 9, 21,
]
STAGE_COMPUTE_S = [
    0.005368, 0.004826, 0.003514, 0.003465, 0.003698, 0.00308,
    0.004324, 0.004166, 0.005111, 0.002366, 0.007078, 0.008854,
    0.00681, 0.002881, 0.018061, 0.019301, 0.003659, 0.009605,
    0.005379, 0.005169, 0.005205, 0.0,
]
BEFORE_S = 0.000687
COMPUTE_S = 0.0192685485055914


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
