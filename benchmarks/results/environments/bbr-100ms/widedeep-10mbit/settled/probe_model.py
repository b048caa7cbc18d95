"""TensorFlow link probe of the step of widedeep: 8 tensors, 442,372 B each way,
0.0 ms of compute in 4 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    131072, 275456, 4, 512, 1024, 32768, 512, 1024,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    1, 1, 1, 1, 1, 1, 1, 1,
]
RELEASE_AFTER = [
    2, 2, 0, 1, 1, 3, 3, 3,
]
STAGE_COMPUTE_S = [
    0.0, 0.0, 0.0, 0.0,
]
BEFORE_S = 0.0
COMPUTE_S = 0.007186914247130249


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
