"""TensorFlow link probe of the step of resnet: 47 tensors, 698,792 B each way,
211.9 ms of compute in 22 stages as the model computes them. Written by tracetool validate;
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
    0.008577, 0.007712, 0.005614, 0.005537, 0.005908, 0.004922,
    0.00691, 0.006657, 0.008167, 0.003781, 0.01131, 0.014147,
    0.010881, 0.004603, 0.02886, 0.03084, 0.005847, 0.015348,
    0.008596, 0.00826, 0.008317, 0.0,
]
BEFORE_S = 0.001098
COMPUTE_S = 0.0192685485055914


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
