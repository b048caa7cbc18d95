"""TensorFlow link probe of the step of widedeep: 8 tensors, 442,372 B each way,
4.6 ms of compute in 5 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    4, 512, 512, 131072, 1024, 32768, 275456, 1024,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    1, 1, 1, 1, 1, 1, 1, 1,
]
RELEASE_AFTER = [
    0, 2, 4, 2, 1, 3, 3, 3,
]
STAGE_COMPUTE_S = [
    0.000543, 0.000908, 0.00127, 0.0, 0.0,
]
BEFORE_S = 0.001868
COMPUTE_S = 0.009764472928438461


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
