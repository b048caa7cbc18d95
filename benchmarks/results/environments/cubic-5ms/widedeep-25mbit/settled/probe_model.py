"""TensorFlow link probe of the step of widedeep: 8 tensors, 442,372 B each way,
0.0 ms of compute in 7 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    512, 275456, 131072, 1024, 4, 512, 32768, 1024,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    1, 1, 1, 1, 2, 2, 1, 1,
]
RELEASE_AFTER = [
    3, 5, 4, 3, 0, 6, 6, 6,
]
STAGE_COMPUTE_S = [
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0,
]
BEFORE_S = 0.0
COMPUTE_S = 0.00916276569885216


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
