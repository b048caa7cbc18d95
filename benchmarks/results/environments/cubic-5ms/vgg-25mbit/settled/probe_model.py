"""TensorFlow link probe of the step of vgg: 24 tensors, 2,494,088 B each way,
47.5 ms of compute in 17 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    0, 165888, 192, 0, 41472, 96, 384, 0, 262144, 96,
    1024, 1572864, 0, 2592, 40, 384, 0, 20736, 10240, 331776,
    192, 1024, 0, 82944,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    0, 4, 2, 0, 2, 0, 4, 0, 6, 1,
    6, 6, 2, 0, 6, 5, 5, 1, 6, 5,
    3, 6, 7, 3,
]
RELEASE_AFTER = [
    16, 11, 14, 16, 13, 16, 9, 16, 7, 16,
    9, 8, 16, 16, 9, 14, 16, 15, 6, 10,
    16, 9, 16, 12,
]
STAGE_COMPUTE_S = [
    0.001157, 0.004249, 0.000624, 0.00234, 0.002138, 0.002044,
    0.001223, 0.000583, 0.003292, 0.002437, 0.00339, 0.004537,
    0.003616, 0.006773, 0.001373, 0.001662, 0.0,
]
BEFORE_S = 0.006096
COMPUTE_S = 0.011114765065852295


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
