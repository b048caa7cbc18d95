"""TensorFlow link probe of the step of resnet: 47 tensors, 698,792 B each way,
50.3 ms of compute in 25 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    256, 147456, 0, 0, 64, 256, 36864, 9216, 1728, 40,
    147456, 0, 0, 0, 64, 0, 2560, 256, 256, 0,
    128, 9216, 0, 147456, 8192, 128, 2048, 0, 256, 36864,
    128, 0, 64, 128, 18432, 64, 9216, 73728, 0, 9216,
    128, 0, 0, 36864, 0, 64, 0,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    9, 9, 0, 0, 5, 9, 6, 5, 1, 10,
    9, 0, 0, 0, 3, 0, 10, 8, 8, 0,
    6, 3, 1, 8, 8, 7, 6, 1, 8, 7,
    6, 1, 2, 6, 6, 4, 2, 8, 4, 4,
    7, 4, 4, 7, 1, 1, 13,
]
RELEASE_AFTER = [
    20, 11, 24, 24, 22, 20, 15, 20, 23, 20,
    12, 24, 24, 24, 22, 24, 10, 20, 20, 24,
    22, 21, 24, 13, 13, 22, 17, 24, 24, 16,
    22, 24, 22, 22, 19, 24, 22, 14, 24, 23,
    24, 24, 24, 18, 24, 24, 24,
]
STAGE_COMPUTE_S = [
    0.000445, 0.000676, 0.001204, 0.00276, 0.000218, 0.002774,
    0.002152, 0.002144, 0.001948, 0.001077, 0.002477, 0.002305,
    0.002289, 0.001824, 0.002684, 0.002553, 0.001345, 0.002103,
    0.002287, 0.003992, 0.002032, 0.003824, 0.003168, 0.000133,
    0.0,
]
BEFORE_S = 0.001837
COMPUTE_S = 0.016546240086668162


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
