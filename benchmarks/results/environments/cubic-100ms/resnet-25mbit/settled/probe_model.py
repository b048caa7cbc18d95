"""TensorFlow link probe of the step of resnet: 47 tensors, 698,792 B each way,
49.8 ms of compute in 27 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    9216, 1728, 0, 0, 256, 40, 147456, 2560, 0, 256,
    256, 256, 0, 147456, 8192, 0, 36864, 0, 147456, 128,
    0, 0, 64, 64, 128, 0, 9216, 0, 256, 36864,
    0, 0, 73728, 128, 128, 0, 9216, 36864, 2048, 64,
    0, 128, 9216, 64, 18432, 64, 0,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    3, 1, 0, 0, 10, 11, 10, 11, 0, 9,
    10, 9, 0, 9, 9, 0, 8, 0, 10, 8,
    1, 1, 5, 2, 7, 1, 5, 1, 9, 7,
    1, 1, 9, 6, 6, 1, 2, 6, 6, 4,
    7, 6, 4, 1, 6, 3, 16,
]
RELEASE_AFTER = [
    21, 26, 26, 26, 24, 24, 12, 11, 26, 24,
    24, 24, 26, 13, 13, 26, 16, 26, 14, 24,
    26, 26, 24, 24, 24, 26, 22, 26, 26, 17,
    26, 26, 15, 24, 24, 26, 23, 19, 18, 24,
    26, 26, 25, 25, 20, 26, 26,
]
STAGE_COMPUTE_S = [
    0.000636, 0.000576, 0.001236, 0.001605, 0.001188, 0.002661,
    0.001101, 0.001019, 0.00204, 0.00194, 0.001247, 0.002513,
    0.003391, 0.00219, 0.001827, 0.002512, 0.002381, 0.00129,
    0.00214, 0.002207, 0.003032, 0.0028, 0.002941, 0.001433,
    0.001457, 0.00104, 0.0,
]
BEFORE_S = 0.0014
COMPUTE_S = 0.01580907922826008


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
