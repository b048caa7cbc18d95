"""TensorFlow link probe of the step of vgg: 24 tensors, 2,494,088 B each way,
36.8 ms of compute in 20 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    1024, 1572864, 262144, 384, 0, 96, 331776, 192, 0, 40,
    0, 192, 10240, 384, 41472, 2592, 1024, 82944, 20736, 165888,
    0, 96, 0, 0,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    6, 6, 6, 5, 0, 0, 5, 3, 0, 6,
    0, 2, 6, 4, 2, 0, 6, 3, 1, 4,
    9, 1, 10, 10,
]
RELEASE_AFTER = [
    13, 8, 7, 13, 19, 17, 11, 13, 19, 13,
    19, 16, 6, 13, 15, 19, 13, 14, 18, 12,
    19, 19, 19, 19,
]
STAGE_COMPUTE_S = [
    0.000883, 0.003348, 0.001076, 0.00225, 0.00125, 0.002703,
    0.000411, 0.000829, 0.002468, 0.002232, 0.000571, 0.002822,
    0.003302, 0.000824, 0.002009, 0.002512, 0.003035, 0.001844,
    0.001266, 0.0,
]
BEFORE_S = 0.001183
COMPUTE_S = 0.011433345719680799


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
