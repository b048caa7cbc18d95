"""TensorFlow link probe of the step of widedeep: 8 tensors, 442,372 B each way,
4.0 ms of compute in 4 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    4, 275456, 512, 512, 131072, 1024, 1024, 32768,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    1, 1, 1, 1, 1, 1, 1, 1,
]
RELEASE_AFTER = [
    0, 2, 2, 3, 2, 1, 3, 3,
]
STAGE_COMPUTE_S = [
    0.000567, 0.001485, 0.000558, 0.0,
]
BEFORE_S = 0.001364
COMPUTE_S = 0.007366624732472626


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
