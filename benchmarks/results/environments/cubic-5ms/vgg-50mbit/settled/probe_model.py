"""TensorFlow link probe of the step of vgg: 24 tensors, 2,494,088 B each way,
47.9 ms of compute in 17 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    384, 384, 0, 331776, 165888, 96, 192, 20736, 82944, 0,
    41472, 40, 10240, 1024, 0, 262144, 0, 96, 1024, 192,
    0, 1572864, 0, 2592,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    7, 6, 0, 7, 6, 2, 5, 2, 5, 5,
    4, 8, 8, 8, 3, 8, 3, 1, 8, 4,
    3, 8, 8, 1,
]
RELEASE_AFTER = [
    13, 13, 16, 10, 11, 16, 16, 15, 12, 16,
    14, 14, 9, 14, 16, 9, 16, 16, 14, 16,
    16, 13, 16, 16,
]
STAGE_COMPUTE_S = [
    8.3e-05, 0.000985, 0.001997, 0.001714, 0.001697, 0.001975,
    0.001404, 0.00293, 0.001636, 0.005818, 0.003736, 0.005528,
    0.002129, 0.002594, 0.007237, 0.001485, 0.0,
]
BEFORE_S = 0.004939
COMPUTE_S = 0.011440260895874688


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
