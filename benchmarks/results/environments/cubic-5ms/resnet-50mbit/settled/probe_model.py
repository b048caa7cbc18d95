"""TensorFlow link probe of the step of resnet: 47 tensors, 698,792 B each way,
59.7 ms of compute in 26 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    9216, 0, 0, 0, 0, 40, 2560, 256, 147456, 0,
    147456, 128, 128, 0, 0, 36864, 0, 64, 256, 0,
    73728, 0, 64, 9216, 147456, 0, 256, 36864, 9216, 64,
    256, 0, 0, 64, 1728, 256, 0, 128, 18432, 0,
    128, 2048, 64, 8192, 36864, 128, 9216,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    2, 0, 0, 0, 0, 9, 9, 8, 8, 0,
    7, 6, 5, 0, 0, 6, 0, 1, 8, 0,
    7, 0, 3, 1, 8, 4, 7, 5, 3, 0,
    7, 0, 0, 2, 0, 7, 7, 5, 5, 14,
    6, 5, 4, 7, 6, 5, 4,
]
RELEASE_AFTER = [
    20, 25, 25, 25, 25, 18, 9, 18, 10, 25,
    11, 20, 20, 25, 25, 14, 25, 23, 18, 25,
    13, 25, 23, 21, 12, 25, 18, 15, 22, 23,
    18, 25, 25, 23, 25, 25, 25, 23, 19, 25,
    23, 16, 25, 11, 17, 25, 24,
]
STAGE_COMPUTE_S = [
    0.001036, 0.001443, 0.001815, 0.001346, 0.002888, 0.002401,
    0.002177, 0.00218, 0.001438, 0.002921, 0.003822, 0.002485,
    0.002165, 0.003558, 0.002309, 0.001549, 0.002585, 0.001701,
    0.000908, 0.003913, 0.002786, 0.003425, 0.002301, 0.000983,
    0.001207, 0.0,
]
BEFORE_S = 0.004394
COMPUTE_S = 0.0163988777387733


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
