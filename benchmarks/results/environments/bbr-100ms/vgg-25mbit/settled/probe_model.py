"""TensorFlow link probe of the step of vgg: 24 tensors, 2,494,088 B each way,
39.4 ms of compute in 19 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    10240, 41472, 2592, 1024, 384, 96, 262144, 331776, 0, 1024,
    0, 1572864, 384, 0, 165888, 96, 0, 0, 192, 192,
    82944, 20736, 40, 0,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    7, 3, 0, 7, 6, 0, 7, 6, 4, 7,
    2, 7, 5, 5, 5, 1, 2, 2, 3, 4,
    4, 1, 7, 10,
]
RELEASE_AFTER = [
    7, 14, 18, 13, 13, 16, 8, 11, 18, 13,
    18, 9, 14, 18, 12, 18, 18, 18, 14, 15,
    13, 17, 13, 18,
]
STAGE_COMPUTE_S = [
    0.001096, 0.002862, 0.000758, 0.001185, 0.002335, 0.001313,
    0.002949, 0.000315, 0.000934, 0.001826, 0.002851, 0.002929,
    0.005638, 0.002738, 0.003246, 0.002558, 0.00186, 0.001319,
    0.0,
]
BEFORE_S = 0.000679
COMPUTE_S = 0.011352533593098402


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
