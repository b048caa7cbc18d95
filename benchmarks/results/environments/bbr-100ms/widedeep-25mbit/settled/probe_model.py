"""TensorFlow link probe of the step of widedeep: 8 tensors, 442,372 B each way,
6.3 ms of compute in 5 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    275456, 512, 131072, 4, 1024, 1024, 32768, 512,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    1, 1, 1, 2, 1, 1, 1, 2,
]
RELEASE_AFTER = [
    4, 2, 3, 0, 2, 4, 4, 4,
]
STAGE_COMPUTE_S = [
    0.000585, 0.000515, 0.000661, 0.001857, 0.0,
]
BEFORE_S = 0.002636
COMPUTE_S = 0.010747938686547664


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
