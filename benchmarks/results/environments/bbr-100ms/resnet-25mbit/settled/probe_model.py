"""TensorFlow link probe of the step of resnet: 47 tensors, 698,792 B each way,
55.7 ms of compute in 29 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    147456, 0, 0, 64, 0, 147456, 73728, 36864, 9216, 256,
    0, 128, 36864, 9216, 0, 147456, 0, 256, 0, 64,
    0, 36864, 0, 0, 9216, 256, 0, 128, 64, 64,
    256, 0, 0, 128, 1728, 0, 18432, 128, 8192, 64,
    128, 2048, 9216, 0, 40, 2560, 256,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    11, 0, 0, 2, 0, 9, 8, 6, 2, 10,
    0, 7, 5, 3, 0, 10, 3, 8, 3, 1,
    3, 7, 7, 3, 1, 9, 12, 5, 3, 1,
    8, 8, 8, 5, 1, 8, 5, 6, 8, 4,
    5, 5, 4, 15, 12, 12, 11,
]
RELEASE_AFTER = [
    13, 28, 28, 27, 28, 14, 17, 18, 23, 18,
    28, 20, 19, 25, 28, 16, 28, 18, 28, 27,
    28, 21, 28, 28, 26, 18, 28, 24, 27, 28,
    18, 28, 28, 26, 28, 28, 22, 26, 15, 28,
    28, 20, 28, 28, 18, 18, 28,
]
STAGE_COMPUTE_S = [
    0.000903, 0.001455, 0.002966, 0.000236, 0.002864, 0.001324,
    0.00131, 0.002206, 0.000235, 0.001202, 0.001232, 0.001275,
    0.002686, 0.002777, 0.001501, 0.001236, 0.002339, 0.002959,
    0.002846, 0.00222, 0.001788, 0.002672, 0.003375, 0.001364,
    0.001862, 0.00337, 0.001468, 0.002727, 0.0,
]
BEFORE_S = 0.001309
COMPUTE_S = 0.01617823351216674


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
