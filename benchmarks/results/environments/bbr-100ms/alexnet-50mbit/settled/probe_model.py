"""TensorFlow link probe of the step of alexnet: 21 tensors, 2,313,000 B each way,
141.2 ms of compute in 15 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    40, 256, 256, 10240, 0, 384, 0, 1024, 384, 204800,
    331776, 0, 9600, 128, 221184, 221184, 262144, 1024, 0, 1048576,
    0,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    5, 4, 1, 5, 1, 2, 1, 5, 3, 1,
    3, 2, 0, 0, 4, 2, 5, 5, 7, 5,
    8,
]
RELEASE_AFTER = [
    7, 7, 13, 6, 14, 7, 14, 7, 11, 12,
    9, 14, 14, 14, 7, 10, 6, 7, 14, 7,
    14,
]
STAGE_COMPUTE_S = [
    0.009136, 0.016079, 0.000806, 0.004981, 0.004183, 0.00337,
    0.01284, 0.010259, 0.004885, 0.010221, 0.017821, 0.026706,
    0.0048, 0.01376, 0.0,
]
BEFORE_S = 0.001368
COMPUTE_S = 0.011777937284910944


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
