"""TensorFlow link probe of the step of alexnet: 21 tensors, 2,313,000 B each way,
44.4 ms of compute in 13 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    204800, 0, 1024, 262144, 1024, 384, 1048576, 331776, 0, 40,
    256, 221184, 128, 10240, 221184, 0, 0, 0, 9600, 384,
    256,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    2, 0, 6, 6, 6, 3, 6, 4, 1, 6,
    5, 3, 1, 6, 5, 1, 1, 1, 1, 4,
    2,
]
RELEASE_AFTER = [
    10, 12, 11, 6, 12, 11, 11, 8, 12, 12,
    11, 7, 11, 6, 9, 12, 12, 12, 11, 11,
    11,
]
STAGE_COMPUTE_S = [
    0.000199, 0.001652, 0.00461, 0.001506, 0.002014, 0.002168,
    0.006567, 0.005288, 0.005592, 0.011126, 0.002689, 0.0,
    0.0,
]
BEFORE_S = 0.000947
COMPUTE_S = 0.011685756467830766


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
