"""TensorFlow link probe of the step of vgg: 24 tensors, 2,494,088 B each way,
53.4 ms of compute in 17 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    40, 0, 10240, 331776, 96, 1024, 20736, 262144, 0, 0,
    1024, 192, 192, 1572864, 82944, 96, 384, 0, 2592, 384,
    41472, 165888, 0, 0,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    7, 0, 7, 6, 2, 7, 2, 7, 0, 0,
    7, 4, 3, 7, 4, 1, 6, 6, 1, 5,
    3, 5, 9, 11,
]
RELEASE_AFTER = [
    9, 16, 7, 9, 16, 9, 15, 7, 16, 16,
    9, 12, 14, 8, 12, 16, 9, 16, 16, 9,
    13, 10, 16, 16,
]
STAGE_COMPUTE_S = [
    0.000124, 0.001166, 0.004519, 0.001569, 0.003036, 0.001826,
    0.004334, 0.001108, 0.007848, 0.003466, 0.00251, 0.005124,
    0.003202, 0.005575, 0.004359, 0.001784, 0.0,
]
BEFORE_S = 0.001859
COMPUTE_S = 0.011784722570466033


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
