"""TensorFlow link probe of the step of resnet: 47 tensors, 698,792 B each way,
58.3 ms of compute in 24 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    2560, 256, 0, 128, 0, 9216, 1728, 256, 147456, 8192,
    0, 128, 0, 64, 147456, 0, 256, 36864, 2048, 0,
    0, 0, 73728, 128, 128, 9216, 128, 36864, 18432, 0,
    0, 64, 0, 9216, 64, 9216, 36864, 0, 0, 64,
    64, 0, 0, 256, 40, 147456, 256,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    9, 7, 0, 6, 0, 2, 0, 8, 7, 7,
    0, 5, 0, 1, 8, 0, 7, 6, 5, 7,
    7, 3, 7, 5, 5, 3, 6, 5, 5, 0,
    3, 4, 3, 4, 3, 1, 6, 0, 7, 2,
    0, 9, 10, 8, 9, 8, 7,
]
RELEASE_AFTER = [
    9, 9, 23, 21, 23, 18, 23, 10, 10, 11,
    23, 21, 23, 23, 11, 23, 21, 14, 16, 23,
    23, 23, 13, 21, 21, 19, 23, 15, 17, 23,
    23, 23, 23, 20, 23, 22, 16, 23, 23, 23,
    23, 23, 23, 21, 9, 12, 23,
]
STAGE_COMPUTE_S = [
    0.001086, 0.001289, 0.001876, 0.00123, 0.002696, 0.002351,
    0.002075, 0.002081, 0.002252, 0.002886, 0.003284, 0.002419,
    0.002078, 0.002822, 0.002629, 0.003063, 0.002516, 0.003339,
    0.003121, 0.003352, 0.002168, 0.001034, 0.00116, 0.0,
]
BEFORE_S = 0.005523
COMPUTE_S = 0.01554255910377933


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
